// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// node: one rank's end of causal::mpi -- it exports local semaphores under
// stable ids and keeps, for semaphores other ranks export, *proxies*:
// ordinary causal semaphores that follow the owner's values, frontiers and
// producers, so queues, host waits, timepoints and coroutines work on a
// remote semaphore unchanged.
//
// Model. `export_semaphore(id, s)` installs a semaphore_observer on `s`.
// From then on every submitted signal, reached value and failure of `s` is
// recorded, under `s`'s lock and allocation-free. Submitted records wait in
// the export's small outbox. Reached values, failures and the end of an
// export are *ordered news*: every export of the node appends them to one
// batch, under one spin lock, in the order the hooks ran; a reached value
// folds into the export's previous one only when nothing else was appended
// in between (a run of one export's values coalesces; T1 S1 T2 S2 does
// not). A reached value supersedes the submitted records at or below it.
// The progress context is woken. `poll()` -- the progress context, one
// thread at a time -- first takes the batch and sends its news to each
// export's subscribers (the ranks with a proxy of it) as SUBMITTED,
// REACHED and FAILED messages (wire.hpp), then reads what has arrived and
// applies it to the proxies (and sends any news that applying made):
//
//   SUBMITTED(v, f, p)  proxy.submit_signal(v, f, p)   remote pipelining:
//                        a queue whose knowledge covers p elides its wait
//   REACHED(v, f, p)    proxy.signal(v, f, p)           (signal_external
//                        for an external value)
//   FAILED(e)           proxy.fail(e): the owner's code, position and text
//   BYE / silence       proxy.fail(a node error naming the rank)
//
//   rank A (owner)                              rank B
//   S.submit_signal(5)  --hook--> outbox --poll--> SUBMITTED(5) --> proxy(5 submitted)
//   S.signal(5), (6)    --hook--> batch (6 folds into 5) --> REACHED(6) --> proxy = 6
//
// Order. A peer applies one owner's REACHED and FAILED news in the order
// the owner's exports reached them (the batch's order; carriers are FIFO
// per pair). That is what makes a remote frontier sound: (axis, e) claims
// that operation e completed with every signal of it reached
// (docs/queues.md, "Signals of one operation"), so a rank that learnt it
// from the proxy of an operation's last signal elides its waits on the
// proxies of the others -- which must have reached their values by then.
// SUBMITTED news are sent first: they let a waiter elide only once it knows
// their producer, which only a later REACHED teaches. A batch that is full
// (Traits::news_capacity) takes no more entries until poll() takes it: a
// later reached value of an export goes right after that export's last
// entry as an *external* value (no frontier, nothing claimed: the proxy's
// value is tainted until a witnessed one heals it; stats().
// reached_without_frontier), except the latest such value of all, which
// goes last with its frontier; a failure goes after the batch. A new
// subscriber's snapshot follows every news sent before it, so it never
// claims what its rank has not heard.
//
// Causal delivery. Messages of different owners arrive in no particular
// order, and a frontier can carry an owner's entry through a third rank:
// A's operation e signals T, then S (only S carries (A, e)); C's queue
// waits on its proxy of S and signals U, whose frontier then carries
// (A, e); rank B, with proxies of T and U, may get C's REACHED(U) before
// A's REACHED(T). Had B applied it, a queue on B that learnt (A, e) from
// U would elide its wait on T's proxy -- whose submitted record names
// producer (A, e) -- while that proxy is still below the value. So the
// receiver keeps two rules, both local, for every proxy Q of another
// owner than the sender and every submitted signal (w, producer p)
// announced on Q and not reached:
//   - A REACHED that would make a proxy P reach a value whose frontier
//     covers p (epoch_of(p.axis) >= p.epoch) is *held*, with everything
//     its sender sent after it (SUBMITTED, REACHED, FAILED, BYE: the
//     sender's order is kept), until Q reaches w or fails (its owner
//     failed it or withdrew it, left, vanished, Q was closed, this node
//     shut down). The frontier checked is the message's (which holds the
//     one P's own submitted signal of that value carries) and, when the
//     value passes other submitted signals of P, theirs: a queue's device
//     wait on one of those imported its frontier at submit time.
//   - A SUBMITTED whose producer another owner's REACHED already claimed
//     is not announced on its proxy (stats().submitted_covered): a queue
//     here may know the claim while the value's REACHED is still on its
//     way. A wait on the value is then a device wait, or held on the
//     host, until the value arrives.
// Why waiting is safe: (A, e) in a frontier says operation e completed
// with every signal of it reached, so A reached w before the claim was
// made and its REACHED(w) is sent or on its way; each hold waits for news
// its sender's claim already saw, so holds cannot wait on each other in a
// cycle, and a lost owner fails Q, which releases them. Nothing is needed
// for a proxy of the sender itself (its news arrive in its order), nor for
// a signal this node has not heard of (no queue can elide a wait on it by
// dominance, and the second rule covers it once it arrives). Gating the
// reach is enough: a queue elides (tier 1) only through its knowledge,
// which holds a remote entry only after a wait on a proxy -- a reached
// value, or a device wait ordered after the proxy reaches the value whose
// frontier it imported; tier 1's same-queue case never applies to a proxy
// (only the node signals it). The check costs, per received REACHED, one
// table lookup per frontier entry (the highest epoch claimed per axis and
// owner is noted there for the second rule) and nothing more unless the
// axis has a submitted signal of another owner at or below the claimed
// epoch. Limits: claims must be true (an owner's frontier naming an
// operation not completed holds the claimer's news until it completes or
// its owner is lost); and within one owner the order is the batch's, so
// when more ordered news arrive between two polls than the batch holds,
// a value sent early as an external catch-up can reach its proxy before
// the same owner's news that the proxy's submitted signal of that value
// claims (a queue that issued a device wait on that value may then elide
// a wait on the other proxy too early): size Traits::news_capacity for the
// news between two polls.
//
// `open_proxy(owner, id)` creates the proxy (the node owns it; the
// reference stays valid for the node's life) and sends SUBSCRIBE; the owner
// answers with the export's latest reached record(s), every outstanding
// submitted record (re-read from the semaphore) and its failure, so a proxy
// opened late starts from the current state. A SUBSCRIBE for an id not (yet)
// exported is held until the owner exports it. Updates a proxy already has
// (at or below its value, a repeated submit) are ignored: every value is
// applied at most once, in increasing order, and a proxy is failed by the
// node at most once. A value a proxy reached stays reached when it fails
// (<causal/semaphore.hpp>); a subscriber to a failed, withdrawn or
// destroyed export first gets the value it had reached, then the failure.
//
// Start-up and liveness. start() validates the job against the axis layout
// (every rank must fit its machine field; see rank_axes.hpp); the first
// poll() sends HELLO to every rank: this rank, the job size, the session,
// the layout, its heartbeat interval, frontier capacity, its axes with
// their current epochs (allocate_axis / announce_axis) and its export ids.
// Messages from a rank before its HELLO are protocol errors. A rank sends a
// HEARTBEAT to a peer it sent nothing to for heartbeat_interval; a peer
// not heard from for heartbeat_timeout (by the injected Clock), one whose
// carrier reports it unreachable, or one a send to fails, is *lost*: every
// proxy it owns fails with a clear error (errc::timeout "... stopped
// responding", the carrier's error, or errc::cancelled "... left the job
// (BYE)" after an orderly BYE), its subscriptions end, an attached
// completion tracker fails its axes and the peer-lost handler runs.
// Time is read once per poll, after delivery, and only by a poll that has
// moved nothing by then or follows 15 busy ones (a steady_clock read costs
// ~16 ns, the default coarse clock's ~4 ns, and a poll that delivered
// returns to a caller waiting for it): peers
// heard from or sent to in between are stamped at the next read, and the
// liveness checks run in the polls that read it -- at the latest in the
// 16th poll of a busy stream, at once in an idle one.
// shutdown() sends what is pending, then BYE (after HELLO, when a started
// node never polled), fails this node's proxies (cancelled) and withdraws
// its exports.
//
// Untrusted input. Every received message is decoded strictly; a rejected
// one is counted (stats().malformed) with the first problem kept
// (stats().last_error), never fatal. When the rejected bytes still name an
// export of a rank we hold a proxy of (REACHED or FAILED), that proxy is
// failed with the parse error: a lost REACHED would otherwise strand it.
//
// Progress. Everything that touches the carrier runs in poll() and
// shutdown() (and the destructor of a node never shut down), so one thread
// at a time drives MPI: MPI_THREAD_FUNNELED is enough when the main thread
// itself calls poll(); with node_thread or node_process (progress.hpp),
// whose polls run on a helper thread or on executor workers one at a time,
// MPI_THREAD_SERIALIZED is needed -- if the program makes no other MPI call
// while the node runs. A program that calls MPI from other threads meanwhile
// needs MPI_THREAD_MULTIPLE. set_waker() tells a driver when an export has
// news, so an idle driver can sleep.
//
// Thread safety: export_semaphore, withdraw, open_proxy, close_proxy,
//                allocate_axis, announce_axis, request_shutdown, stats,
//                peer and has_work may be called from any thread,
//                concurrently; poll and shutdown from one thread at a time
//                (the progress context; asserted). The export hooks run on
//                whatever thread signals an exported semaphore.
// Memory order:  what a thread did before signalling an exported semaphore
//                is not published to other ranks (only the semaphore's
//                values and frontiers are); on this rank, a proxy signal
//                made by poll() releases like any signal.
// Blocking/allocation: the export hooks never block or allocate: they copy
//                the record into the batch (or the outbox) under the
//                node's news spin lock, which every export's hooks share
//                (that is what orders them), and, when the node had no
//                news, wake the driver, if one set a waker (under a spin
//                lock). poll()'s per-message path takes no lock and
//                allocates nothing: an update is decoded into the node's
//                one message, its proxy found in a table that only poll()
//                touches (open_proxy and export_semaphore hand new entries
//                over through the control queue), and applied with no
//                allocation (a proxy allocates only when more submitted
//                signals are outstanding than ever before); news are taken
//                under the news lock (the batch by swapping two, the
//                outboxes one export at a time) and encoded into a fixed
//                buffer; the counters are atomics with one writer,
//                updated without a locked instruction. poll() takes
//                the node's mutex only to take requests other threads left,
//                for a peer's HELLO, to record a malformed message or
//                protocol error (stats().last_error) and when a peer is
//                lost; an export's mutex only to re-read submitted records
//                (a new subscriber, an outbox overflow). It allocates when a
//                peer's HELLO arrives, a subscriber or early subscription is
//                added, a table grows, a frontier names an axis for the
//                first time, or more submitted signals or held messages
//                are outstanding than ever before (causal delivery's
//                tables keep their size). The carrier may allocate (see its
//                own header). export_semaphore, open_proxy and
//                announce_axis allocate (slots and table entries) and take
//                the node's mutex.
// Size:          an export slot holds Traits::outbox_capacity + 1 records
//                of ~sizeof(Frontier) + 16 bytes (about 3.8 KiB with the
//                defaults); a proxy slot holds a Semaphore and 65 bytes of
//                failure text; the node holds two batches of
//                Traits::news_capacity entries of sizeof(Frontier) + 64
//                bytes (33 KiB with the defaults), a few records of
//                scratch, per-rank peer state and its tables; per axis
//                received frontiers named, ~100 bytes and 24 per
//                submitted signal it produced that a proxy holds; per peer,
//                the bytes of its held messages.
// Configuration: Carrier (causal::mpi::carrier), Semaphore (the proxy type,
//                a basic_semaphore or an adapter semaphore; its frontier
//                type and layout are the node's), Traits
//                (default_node_traits: outbox_capacity, news_capacity,
//                max_proxy_pending, max_early_subscriptions,
//                max_held_messages, max_tracked_axes), Clock
//                (coarse_node_clock, to within a clock tick;
//                steady_node_clock; manual_clock in tests);
//                node_options at run time (session, heartbeat interval
//                and timeout).
// See also:      adapters/mpi/README.md, <causal/adapters/mpi/wire.hpp>,
//                <causal/adapters/mpi/carrier.hpp>,
//                <causal/adapters/mpi/progress.hpp>,
//                <causal/adapters/mpi/rank_axes.hpp>, <causal/semaphore.hpp>.
#pragma once

#include <causal/adapters/mpi/carrier.hpp>
#include <causal/adapters/mpi/rank_axes.hpp>
#include <causal/adapters/mpi/wire.hpp>
#include <causal/axis.hpp>
#include <causal/config.hpp>
#include <causal/detail/spin_lock.hpp>
#include <causal/frontier.hpp>
#include <causal/result.hpp>
#include <causal/semaphore.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

CAUSAL_BEGIN_NAMESPACE

namespace mpi {

//===-- configuration -------------------------------------------------------===//

/// Compile-time limits of basic_node. Derive and override.
struct default_node_traits {
  /// Submitted records an export buffers between two polls. When more are
  /// submitted in between, the slot drops its buffer and the next poll
  /// re-reads every outstanding record from the semaphore (a resync, one
  /// lock per record): nothing is lost, the buffer only saves re-reading.
  /// 16 records are ~3.5 KiB per export with the default frontier.
  static constexpr std::size_t outbox_capacity = 16;
  /// Ordered news (reached values, failures, ends of exports; see the file
  /// comment, "Order") all exports buffer between two polls. A run of one
  /// export's values takes one entry; alternating exports (an operation
  /// that signals T, then S) take one per value. When more arrive, the
  /// excess is sent in order but without frontiers (external values:
  /// sound, but a proxy's waiters learn nothing from them until a witnessed
  /// value heals the taint), except the latest, which keeps its frontier.
  /// 64 entries are 16.5 KiB per batch with the default frontier (two
  /// batches per node); a poll loop that keeps up never fills one.
  static constexpr std::size_t news_capacity = 64;
  /// Submitted signals a proxy holds at most; further SUBMITTED messages
  /// are dropped (counted): a wait on such a value is then only elided once
  /// the value is reached. Bounds what a peer can make this rank allocate.
  static constexpr std::size_t max_proxy_pending = 4096;
  /// Subscriptions one peer may hold for ids not (yet) exported here;
  /// more are answered with FAILED(resource_exhausted).
  static constexpr std::size_t max_early_subscriptions = 1024;
  /// Messages of one peer held in order behind a REACHED that waits for
  /// another owner's news (the file comment, "Causal delivery"). The wait
  /// lasts about one delivery of that owner's news, which it sent before
  /// the claim was made; a peer that fills the queue anyway is lost
  /// (errc::resource_exhausted). Bounds what a peer can make this rank
  /// allocate; the queue keeps its largest size, so a steady stream of
  /// holds does not allocate.
  static constexpr std::size_t max_held_messages = 65536;
  /// Axes named in received frontiers and producers that the node keeps
  /// track of (per axis: the highest epoch other owners claimed, and the
  /// proxies' submitted signals it produced; about 100 bytes each). A
  /// submitted signal whose producer's axis finds the table full is not
  /// announced on its proxy (a wait on it is then only elided once the
  /// value is reached). 16 384 axes hold 64 ranks with 256 queues each.
  static constexpr std::size_t max_tracked_axes = 16384;
};

/// Checks the members basic_node reads from its traits.
template <class T>
concept node_traits = requires {
  { T::outbox_capacity } -> std::convertible_to<std::size_t>;
  { T::news_capacity } -> std::convertible_to<std::size_t>;
  { T::max_proxy_pending } -> std::convertible_to<std::size_t>;
  { T::max_early_subscriptions } -> std::convertible_to<std::size_t>;
  { T::max_held_messages } -> std::convertible_to<std::size_t>;
  { T::max_tracked_axes } -> std::convertible_to<std::size_t>;
};

/// Run-time settings of a node.
struct node_options {
  /// The job's session: the session field of every axis the node
  /// allocates, and what HELLO checks other ranks agree on.
  std::uint64_t session = 0;
  /// A peer this node sent nothing to for this long gets a HEARTBEAT
  /// (0: never).
  std::chrono::microseconds heartbeat_interval{200'000};
  /// A peer heard nothing from for this long is lost (0: never). Must
  /// exceed the peers' heartbeat interval plus the longest gap between two
  /// of their polls.
  std::chrono::microseconds heartbeat_timeout{5'000'000};
};

/// The default clock: the monotonic clock at its tick's resolution
/// (CLOCK_MONOTONIC_COARSE where the platform has it, else steady_clock).
/// Liveness works in milliseconds, but an idle poll reads the clock every
/// time, and a spinning waiter's detection of the next message waits on
/// that poll: on the 2-vCPU test VM the coarse read costs ~4 ns against
/// ~16 ns for steady_clock::now(), and the difference was ~55 ns of a
/// ~510 ns remote hop. The coarse clock shares steady_clock's base on
/// Linux and lags it by at most one tick (clock_getres: 4 ms there), so
/// a heartbeat interval or timeout is kept to within one tick; give the
/// node steady_node_clock for finer ones.
struct coarse_node_clock {
  [[nodiscard]] std::chrono::steady_clock::time_point now() const noexcept {
#if defined(CLOCK_MONOTONIC_COARSE)
    timespec ts{};
    if (::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) == 0) {
      return std::chrono::steady_clock::time_point(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec)));
    }
#endif
    return std::chrono::steady_clock::now();
  }
};

/// std::chrono::steady_clock at full resolution (~16 ns a read on the test
/// VM): for heartbeat intervals finer than the coarse clock's tick.
struct steady_node_clock {
  [[nodiscard]] std::chrono::steady_clock::time_point now() const noexcept {
    return std::chrono::steady_clock::now();
  }
};

/// A clock driven by hand: copies share one time, which only advance()
/// moves. Tests give it to a node so that heartbeats and timeouts follow
/// the test's steps, never the machine's speed.
class manual_clock {
 public:
  manual_clock() : ticks_(std::make_shared<std::atomic<std::int64_t>>(0)) {}

  [[nodiscard]] std::chrono::steady_clock::time_point now() const noexcept {
    return std::chrono::steady_clock::time_point(
        std::chrono::steady_clock::duration(ticks_->load(std::memory_order_acquire)));
  }
  /// Moves every copy's time forward by `d`.
  template <class Rep, class Period>
  void advance(std::chrono::duration<Rep, Period> d) const noexcept {
    ticks_->fetch_add(std::chrono::duration_cast<std::chrono::steady_clock::duration>(d).count(),
                      std::memory_order_acq_rel);
  }

 private:
  std::shared_ptr<std::atomic<std::int64_t>> ticks_;
};

/// A clock a node can read: `now()` on a const object, noexcept.
template <class C>
concept node_clock = requires(const C& c) {
  { c.now() } noexcept -> std::same_as<std::chrono::steady_clock::time_point>;
};

/// A semaphore a node can export with frontier type `Frontier`.
template <class S, class Frontier>
concept exportable_semaphore =
    std::same_as<typename S::frontier_type, Frontier> &&
    requires(S& s, const semaphore_observer<Frontier>* o, std::uint64_t v) {
      { s.set_observer(o, o) } -> std::same_as<bool>;
      { s.frontier_at(v) };
      { s.value() } -> std::convertible_to<std::uint64_t>;
    };

//===-- reports -------------------------------------------------------------===//

/// What a node did, cumulatively (a snapshot; see basic_node::stats()).
struct node_stats {
  std::uint64_t messages_sent = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t messages_received = 0;
  std::uint64_t bytes_received = 0;
  /// Received messages decode() rejected.
  std::uint64_t malformed = 0;
  /// Well-formed messages that broke the protocol: before HELLO, a second
  /// HELLO, a HELLO that disagrees with this job, a sender outside the job.
  std::uint64_t protocol_errors = 0;
  /// Updates with nothing to do: for no open proxy, or at or below what
  /// the proxy already has (stale or repeated).
  std::uint64_t updates_ignored = 0;
  /// SUBMITTED refused because the proxy held Traits::max_proxy_pending,
  /// or the node could not keep track of its producer's axis
  /// (Traits::max_tracked_axes, or out of memory).
  std::uint64_t submitted_dropped = 0;
  /// SUBMITTED not announced on the proxy because another owner's news had
  /// already claimed its producer complete (the file comment, "Causal
  /// delivery"): the value's REACHED is on its way.
  std::uint64_t submitted_covered = 0;
  /// REACHED updates held because their frontier claims an operation
  /// complete whose submitted signal a proxy of another owner holds and
  /// has not reached (counted once each), and every message held in the
  /// sender's order: those, and what the sender sent after them.
  std::uint64_t reached_held = 0;
  std::uint64_t messages_held = 0;
  /// Proxy-side edges: updates applied to proxies.
  std::uint64_t submitted_applied = 0;
  std::uint64_t reached_applied = 0;
  /// Proxies the node failed (owner failure, BYE, loss, parse error,
  /// close, shutdown): each at most once.
  std::uint64_t proxies_failed = 0;
  /// Owner-side: update messages sent (one per subscriber).
  std::uint64_t submitted_sent = 0;
  std::uint64_t reached_sent = 0;
  std::uint64_t failed_sent = 0;
  /// Reached values folded into a later one before they were sent.
  std::uint64_t reached_coalesced = 0;
  /// Reached values sent as external values (no frontier) to keep the
  /// order: more ordered news arrived between two polls than
  /// Traits::news_capacity. The proxies' values are tainted until a later
  /// witnessed value heals them.
  std::uint64_t reached_without_frontier = 0;
  /// Submitted records dropped before sending: a reached value covered them.
  std::uint64_t submitted_superseded = 0;
  /// Outbox overflows answered by re-reading the semaphore.
  std::uint64_t resyncs = 0;
  std::uint64_t heartbeats_sent = 0;
  std::uint64_t send_failures = 0;
  std::uint64_t peers_lost = 0;
  /// The first malformed message or protocol error: its error and sender.
  std::optional<error> last_error{};
  std::uint32_t last_error_rank = 0;
};

/// What a node knows of one peer (a copy; see basic_node::peer()).
struct peer_info {
  /// A HELLO (its first part) arrived.
  bool hello = false;
  /// The peer is lost; `lost_error` says why.
  bool lost = false;
  error lost_error{};
  std::uint64_t heartbeat_interval_us = 0;
  std::uint32_t frontier_capacity = 0;
  /// The peer's axes with their epochs at HELLO time.
  std::vector<frontier_entry> axes{};
  /// The ids the peer exported at HELLO time.
  std::vector<std::uint64_t> exports{};
};

//===-- basic_node ----------------------------------------------------------===//

namespace detail {
/// The smallest max_message_bytes a carrier may have: a HELLO part with
/// its fixed fields and at least one list entry.
inline constexpr std::size_t hello_part_minimum = 128;
/// Upper bounds on a HELLO's fixed part and list entries, used to split a
/// long HELLO into parts that fit.
inline constexpr std::size_t hello_fixed_bound = 80;
inline constexpr std::size_t hello_axis_bound = 20;
inline constexpr std::size_t hello_export_bound = 10;
}  // namespace detail

/// One rank's exports and proxies over `Carrier`; see the file comment.
///
/// Template parameters: `Carrier` (a causal::mpi::carrier, used by
/// reference), `Semaphore` (the proxy type; default-constructible, with
/// submit_signal, signal, signal_external, fail), `Traits`
/// (node_traits), `Clock` (node_clock).
template <carrier Carrier, class Semaphore = causal::semaphore, node_traits Traits = default_node_traits,
          node_clock Clock = coarse_node_clock>
class basic_node {
 public:
  using carrier_type = Carrier;
  using semaphore_type = Semaphore;
  using frontier_type = typename Semaphore::frontier_type;
  using layout_type = typename frontier_type::layout_type;
  using observer_type = semaphore_observer<frontier_type>;
  using clock_type = Clock;

  static_assert(Traits::outbox_capacity >= 1, "Traits::outbox_capacity must be at least 1");
  static_assert(Traits::news_capacity >= 1, "Traits::news_capacity must be at least 1");
  static_assert(Carrier::max_message_bytes >= max_update_size<frontier_type>,
                "Carrier::max_message_bytes must hold the largest update (max_update_size<Frontier>)");
  static_assert(Carrier::max_message_bytes >= max_failed_size, "Carrier::max_message_bytes must hold a FAILED");
  static_assert(Carrier::max_message_bytes >= detail::hello_part_minimum,
                "Carrier::max_message_bytes must hold a HELLO part (128 bytes)");

  /// A driver's wake-up: called (under a spin lock, from any thread) when
  /// an export has news and was not queued yet.
  using waker_fn = void (*)(void* context) noexcept;
  /// Called from poll() when a peer is lost.
  using peer_lost_fn = void (*)(void* context, std::uint32_t rank, const error& why) noexcept;

  /// A node for this rank of `carrier` (which must outlive it). Nothing is
  /// sent before start() and the first poll().
  explicit basic_node(Carrier& carrier, node_options options = {}, Clock clock = Clock{})
      : carrier_(&carrier),
        options_(options),
        clock_(std::move(clock)),
        rank_(carrier.rank()),
        size_(carrier.size()),
        axes_(carrier.rank(), options.session),
        peers_(carrier.size()),
        scratch_outbox_(std::make_unique<update_record[]>(Traits::outbox_capacity)) {
    touched_ranks_.reserve(size_);
    for (news_batch& b : batches_) b.entries = std::make_unique<news_entry[]>(Traits::news_capacity);
    detail::note_carrier_user(carrier, +1);
  }

  basic_node(const basic_node&) = delete;
  basic_node& operator=(const basic_node&) = delete;

  /// Shuts down (BYE, from the destroying thread) when started and not
  /// shut down yet, then withdraws every export and destroys the proxies
  /// (their pending timepoints get errc::cancelled, as any semaphore's).
  /// Stop the driver first (node_thread, node_process).
  ~basic_node() {
    if (started_.load(std::memory_order_acquire) && !closed_) {
      do_shutdown();
    } else {
      withdraw_all();
    }
    detail::note_carrier_user(*carrier_, -1);
  }

  [[nodiscard]] std::uint32_t rank() const noexcept { return rank_; }
  [[nodiscard]] std::uint32_t size() const noexcept { return size_; }
  [[nodiscard]] const node_options& options() const noexcept { return options_; }

  /// Checks the job against the layout and arms the first poll() to send
  /// HELLO. Errors: out_of_range when a rank of the job does not fit the
  /// layout's machine field (use a wider layout, rank_axes.hpp) or the
  /// session does not fit; failed_precondition when started before.
  status start() noexcept {
    if (size_ == 0 || rank_ >= size_) return error{errc::invalid_argument, "node: the carrier's rank is not below its size", rank_};
    if (!rank_fits<layout_type>(size_ - 1)) {
      return error{errc::out_of_range,
                   "node: the job has more ranks than the axis layout's MachineBits can name "
                   "(use a layout with more machine bits, e.g. causal::mpi::wide_rank_axis_layout)",
                   size_};
    }
    if (!layout_type::make(axis_fields{options_.session, 0, domain::queue, 0})) {
      return error{errc::out_of_range, "node: the session does not fit the axis layout's SessionBits",
                   options_.session};
    }
    bool expected = false;
    if (!started_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
      return error{errc::failed_precondition, "node: start() called twice"};
    }
    note_control();
    return {};
  }

  //===-- exports -----------------------------------------------------------===//

  /// Exports `sem` under `id`: other ranks' proxies of (this rank, id)
  /// follow it from now on. `sem` must outlive the export, or be destroyed
  /// while exported (its destructor tells the node, and the proxies fail
  /// with errc::cancelled). Errors: invalid_argument when `id` was used
  /// before by this node (ids are never reused) or `sem` already has an
  /// observer; failed_precondition after shutdown; resource_exhausted when
  /// memory runs out. Any thread.
  template <class S>
    requires exportable_semaphore<S, frontier_type>
  status export_semaphore(std::uint64_t id, S& sem) noexcept {
    std::unique_ptr<export_slot> owned(new (std::nothrow) export_slot);
    if (!owned) return error{errc::resource_exhausted, "node: out of memory for an export", id};
    export_slot* slot = owned.get();
    slot->node = this;
    slot->id = id;
    slot->observer = observer_type{slot, &hook_submitted, &hook_reached, &hook_failed, &hook_destroyed};
    slot->sem = &sem;
    slot->uninstall = [](void* s, const observer_type* o) noexcept {
      return static_cast<S*>(s)->set_observer(nullptr, o);
    };
    slot->next_pending = &next_pending_of<S>;
    {
      std::lock_guard lock(mutex_);
      if (closed_flag_.load(std::memory_order_acquire)) {
        return error{errc::failed_precondition, "node: export after shutdown", id};
      }
      if (exports_.contains(id)) {
        return error{errc::invalid_argument, "node: export id used before by this node (ids are never reused)", id};
      }
      try {
        exports_.emplace(id, std::move(owned));
      } catch (...) {
        return error{errc::resource_exhausted, "node: out of memory for an export", id};
      }
    }
    // Outside the mutex: the replay runs the hooks, which may wake the driver.
    if (!sem.set_observer(&slot->observer, nullptr)) {
      std::lock_guard lock(mutex_);
      // Never installed: no hook ran and poll() skips uninstalled slots.
      exports_.erase(id);
      return error{errc::invalid_argument, "node: the semaphore already has an observer (exported elsewhere?)", id};
    }
    {
      std::lock_guard lock(mutex_);
      slot->installed = true;
      push_control(control{control_kind::exported, 0, id, slot});
    }
    note_control();
    return {};
  }

  /// Ends the export of `id`: the observer is removed (no hook runs after
  /// this returns) and every subscriber's proxy fails with errc::cancelled
  /// at the next poll(). Errors: invalid_argument when `id` is not
  /// exported (never, or no longer: withdrawn, or its semaphore was
  /// destroyed). Any thread.
  status withdraw(std::uint64_t id) noexcept {
    export_slot* slot = find_export(id);
    if (slot == nullptr) return error{errc::invalid_argument, "node: withdraw of an id not exported", id};
    {
      std::lock_guard life(slot->life);
      if (slot->sem == nullptr) {
        return error{errc::invalid_argument, "node: withdraw of an export that has already ended", id};
      }
    }
    end_export(*slot, error{errc::cancelled, "the owner withdrew the export", id});
    return {};
  }

  //===-- proxies -----------------------------------------------------------===//

  /// Returns the proxy of export `id` of rank `owner`, creating it (and
  /// subscribing at the next poll()) the first time; later calls return
  /// the same semaphore. The node owns it: it stays valid until the node
  /// is destroyed, and fails (never hangs) when the owner fails it,
  /// withdraws it, leaves or vanishes, or this node shuts down. Only the
  /// node signals it (its writes are reserved, reserve_writes): signal,
  /// submit_signal and a queue's signal of it are refused with
  /// failed_precondition; wait on it, signal the owner's semaphore. Errors:
  /// invalid_argument for this rank or a rank outside the job;
  /// failed_precondition after shutdown; resource_exhausted. Any thread.
  result<Semaphore*> open_proxy(std::uint32_t owner, std::uint64_t id) noexcept {
    if (owner >= size_) return error{errc::invalid_argument, "node: proxy owner outside the job", owner};
    if (owner == rank_) {
      return error{errc::invalid_argument, "node: the export is on this rank: use the semaphore itself", owner};
    }
    Semaphore* sem = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (closed_flag_.load(std::memory_order_acquire)) {
        return error{errc::failed_precondition, "node: open_proxy after shutdown", owner};
      }
      if (auto it = proxies_.find(proxy_key{owner, id}); it != proxies_.end()) return &it->second->sem;
      proxy_slot* raw = nullptr;
      try {
        auto slot = std::make_unique<proxy_slot>();
        slot->owner = owner;
        slot->id = id;
        // Only this node moves the proxy: a local signal would run it
        // ahead of the owner's semaphore (the owner's lower values would
        // then be dropped as stale). Reserved before anyone else sees it.
        (void)slot->sem.reserve_writes(this);
        sem = &slot->sem;
        raw = slot.get();
        proxies_.emplace(proxy_key{owner, id}, std::move(slot));
      } catch (...) {
        return error{errc::resource_exhausted, "node: out of memory for a proxy", owner};
      }
      // poll() enters the proxy in its own lookup table when it takes this.
      push_control(control{control_kind::subscribe, owner, id, raw});
    }
    note_control();
    return sem;
  }

  /// Closes the proxy of (`owner`, `id`): the owner is told
  /// (UNSUBSCRIBE) and the proxy fails with errc::cancelled, at the next
  /// poll(). The semaphore stays valid (and failed) until the node is
  /// destroyed; open_proxy returns it again. Errors: invalid_argument when
  /// there is no such proxy.
  status close_proxy(std::uint32_t owner, std::uint64_t id) noexcept {
    {
      std::lock_guard lock(mutex_);
      auto it = proxies_.find(proxy_key{owner, id});
      if (it == proxies_.end()) {
        return error{errc::invalid_argument, "node: close_proxy of a proxy never opened", owner};
      }
      push_control(control{control_kind::unsubscribe, owner, id, it->second.get()});
    }
    note_control();
    return {};
  }

  //===-- axes --------------------------------------------------------------===//

  /// Allocates an axis of kind `d` on this rank (machine = rank) and
  /// announces it with epoch 0 (announce_axis). Errors as
  /// basic_rank_axis_allocator::allocate.
  [[nodiscard]] result<axis> allocate_axis(domain d) {
    result<axis> a = axes_.allocate(d);
    if (a) {
      if (status s = announce_axis(*a, 0); !s) return s.error_value();
    }
    return a;
  }

  /// allocate_axis under the name an axis source has, so that a node can
  /// give an mpi_collective_channel its axis (collective.hpp): every axis
  /// of the rank then comes from one allocator (two allocators of one rank
  /// hand out the same axes), and peers hear of the collective axis too.
  [[nodiscard]] result<axis> allocate(domain d) { return allocate_axis(d); }

  /// Announces axis `a` of this rank (allocated elsewhere) at `epoch`; a
  /// repeated axis takes the higher epoch. Before the first poll() the
  /// announcement goes out in HELLO; after it, the next poll() sends it in
  /// an AXES message, ahead of any news that poll sends, so a peer hears
  /// of an axis before a frontier of this rank names it. Peers keep what
  /// they heard (peer(r).axes) and fail those axes when this rank is lost
  /// (track_completion). Any thread. Errors: invalid_argument when `a` is
  /// not this rank's (machine or session); resource_exhausted when out of
  /// memory (nothing is announced).
  status announce_axis(axis a, std::uint64_t epoch) noexcept {
    if (!axes_.owns(a)) return error{errc::invalid_argument, "node: the axis is not this rank's", a.raw()};
    bool late = false;
    {
      std::lock_guard lock(mutex_);
      if (hello_taken_) {
        // Reserve first, so that an announcement is in both lists or in
        // neither.
        try {
          late_axes_.reserve(late_axes_.size() + 1);
        } catch (...) {
          return error{errc::resource_exhausted, "node: out of memory for an axis", a.raw()};
        }
      }
      if (const status s = merge_axis(own_axes_, frontier_entry{a, epoch}); !s) return s;
      if (hello_taken_) {
        (void)merge_axis(late_axes_, frontier_entry{a, epoch});  // capacity reserved above
        // seq_cst: a signal this thread makes next, naming the axis, is
        // appended to the news after this store; poll() reads the flag
        // after taking that news (send_announced_axes), so it sends AXES
        // first.
        axes_pending_.store(true, std::memory_order_seq_cst);
        late = true;
      }
    }
    if (late) note_control();
    return {};
  }

  //===-- failure reporting -------------------------------------------------===//

  /// Runs `fn(context, rank, why)` from poll() for every lost peer. Set it
  /// before start().
  void set_peer_lost_handler(peer_lost_fn fn, void* context) noexcept {
    peer_lost_ = fn;
    peer_lost_context_ = context;
  }

  /// Fails, in `tracker` (a completion_tracker or anything with
  /// fail_axis(axis, error)), the axes a lost peer announced in HELLO, so
  /// no completion waiter waits for a rank that is gone. The tracker must
  /// outlive the node. Set it before start().
  template <class Tracker>
  void track_completion(Tracker& tracker) noexcept {
    tracker_ = &tracker;
    fail_axis_ = [](void* t, axis a, const error& e) noexcept {
      (void)static_cast<Tracker*>(t)->fail_axis(a, e);
    };
  }

  //===-- progress (one thread at a time) -----------------------------------===//

  /// Moves messages both ways once: sends HELLO the first time, handles
  /// requests from other threads (subscribe, close), sends every export's
  /// news, delivers what arrived to the proxies, reads the clock (see the
  /// file comment: not in every busy poll), answers subscriptions, sends
  /// the news that delivery made, sends heartbeats and checks peers (in a
  /// poll that read the clock), and performs a requested shutdown.
  /// Returns how much it did (messages handled and sent); 0 means idle.
  /// Does nothing before start() or after shutdown.
  std::size_t poll() noexcept {
    if (!started_.load(std::memory_order_acquire) || closed_) return 0;
    // A load and a store, not an exchange: the locked exchange was a
    // quarter of an idle poll. acquire pairs with the release below, so
    // whatever one progress thread did happens-before the next one's poll.
    // The check is best effort: two polls that start at the same instant
    // may both pass it; it never fires on a correct hand-over.
    [[maybe_unused]] const bool busy = polling_.load(std::memory_order_acquire);
    CAUSAL_ASSERT(!busy, "node::poll called by two threads at once (one progress context)");
    polling_.store(true, std::memory_order_relaxed);
    std::size_t work = 0;
    now_valid_ = false;
    if (!hello_sent_) {
      read_clock();
      work += send_hello();
    }
    work += drain_control();
    // News first: the owner's half of a hop does not wait for the receive
    // step (nor for the clock read, which stamps these sends afterwards).
    work += flush_news();
    work += carrier_->poll(&on_message_thunk, this);
    if (holding_peers_ != 0) [[unlikely]] work += release_held();
    // The clock (~17 ns here) is read after delivery, and only by a poll
    // that moved nothing so far, or after busy_polls_per_clock_read busy
    // ones: a poll that delivered or sent returns without it (the caller
    // is waiting on what it delivered), and peers heard from or sent to
    // are stamped at the next read. Liveness checks run where it was read.
    if (!now_valid_ && (work == 0 || ++busy_polls_ >= busy_polls_per_clock_read)) read_clock();
    work += answer_subscriptions();
    // News the deliveries made (a proxy's callback signalled an export).
    work += flush_news();
    if (now_valid_) work += check_peers();
    work += lose_pending_peers();
    // A lost peer's proxies failed: what waited for them goes on.
    if (holding_peers_ != 0) [[unlikely]] work += release_held();
    if (shutdown_requested_.load(std::memory_order_acquire)) {
      do_shutdown();
      ++work;
    }
    polling_.store(false, std::memory_order_release);
    return work;
  }

  /// Asks the progress context to shut down at its next poll(). Any thread.
  void request_shutdown() noexcept {
    shutdown_requested_.store(true, std::memory_order_release);
    note_control();
  }

  /// Shuts down now, from the progress context (or with no driver
  /// running): sends pending news, BYE to every peer, fails this node's
  /// proxies (errc::cancelled) and withdraws its exports. Later polls do
  /// nothing. Harmless when done before.
  void shutdown() noexcept {
    if (!closed_) do_shutdown();
  }

  /// True once shutdown has completed. Any thread (acquire).
  [[nodiscard]] bool is_shut_down() const noexcept { return closed_flag_.load(std::memory_order_acquire); }
  /// True once start() succeeded. Any thread.
  [[nodiscard]] bool is_started() const noexcept { return started_.load(std::memory_order_acquire); }

  /// True when an export has unsent news or another thread left a request
  /// (lock-free, seq_cst: a driver going to sleep re-checks it after
  /// announcing so, see progress.hpp).
  [[nodiscard]] bool has_work() const noexcept {
    return news_pending_.load(std::memory_order_seq_cst) || control_pending_.load(std::memory_order_seq_cst);
  }

  /// Installs the driver's wake-up (null: none). When it returns, no call
  /// of the previous one is running or will start.
  void set_waker(waker_fn fn, void* context) noexcept {
    causal::detail::spin_guard guard(waker_lock_);
    waker_ = fn;
    waker_context_ = context;
    // seq_cst: with a hook's seq_cst push and load in kick(), a driver
    // that installed its waker, then found no work and slept, is woken.
    has_waker_.store(fn != nullptr, std::memory_order_seq_cst);
  }

  //===-- observers ---------------------------------------------------------===//

  /// A snapshot of the counters. Any thread.
  [[nodiscard]] node_stats stats() const {
    node_stats s;
    s.messages_sent = counters_.messages_sent.load(std::memory_order_relaxed);
    s.bytes_sent = counters_.bytes_sent.load(std::memory_order_relaxed);
    s.messages_received = counters_.messages_received.load(std::memory_order_relaxed);
    s.bytes_received = counters_.bytes_received.load(std::memory_order_relaxed);
    s.malformed = counters_.malformed.load(std::memory_order_relaxed);
    s.protocol_errors = counters_.protocol_errors.load(std::memory_order_relaxed);
    s.updates_ignored = counters_.updates_ignored.load(std::memory_order_relaxed);
    s.submitted_dropped = counters_.submitted_dropped.load(std::memory_order_relaxed);
    s.submitted_covered = counters_.submitted_covered.load(std::memory_order_relaxed);
    s.reached_held = counters_.reached_held.load(std::memory_order_relaxed);
    s.messages_held = counters_.messages_held.load(std::memory_order_relaxed);
    s.submitted_applied = counters_.submitted_applied.load(std::memory_order_relaxed);
    s.reached_applied = counters_.reached_applied.load(std::memory_order_relaxed);
    s.proxies_failed = counters_.proxies_failed.load(std::memory_order_relaxed);
    s.submitted_sent = counters_.submitted_sent.load(std::memory_order_relaxed);
    s.reached_sent = counters_.reached_sent.load(std::memory_order_relaxed);
    s.failed_sent = counters_.failed_sent.load(std::memory_order_relaxed);
    s.reached_coalesced = counters_.reached_coalesced.load(std::memory_order_relaxed);
    s.reached_without_frontier = counters_.reached_without_frontier.load(std::memory_order_relaxed);
    s.submitted_superseded = counters_.submitted_superseded.load(std::memory_order_relaxed);
    s.resyncs = counters_.resyncs.load(std::memory_order_relaxed);
    s.heartbeats_sent = counters_.heartbeats_sent.load(std::memory_order_relaxed);
    s.send_failures = counters_.send_failures.load(std::memory_order_relaxed);
    s.peers_lost = counters_.peers_lost.load(std::memory_order_relaxed);
    std::lock_guard lock(mutex_);
    s.last_error = last_error_;
    s.last_error_rank = last_error_rank_;
    return s;
  }

  /// What this node knows of `rank` (a copy; allocates). Any thread.
  [[nodiscard]] peer_info peer(std::uint32_t rank) const {
    std::lock_guard lock(mutex_);
    if (rank >= size_) return peer_info{};
    const peer_state& p = peers_[rank];
    return peer_info{p.hello_seen, p.lost, p.lost_error, p.heartbeat_interval_us, p.frontier_capacity,
                     p.axes, p.exports};
  }

  /// The number of ranks subscribed to export `id` (0 when not exported).
  /// Any thread; exact only between polls.
  [[nodiscard]] std::size_t subscriber_count(std::uint64_t id) const {
    std::lock_guard lock(mutex_);
    auto it = exports_.find(id);
    return it == exports_.end() ? 0 : it->second->subscriber_count.load(std::memory_order_relaxed);
  }

 private:
  /// A submitted or reached record, as an export keeps and sends it.
  struct update_record {
    std::uint64_t value = 0;
    frontier_type frontier{};
    frontier_entry producer{};
  };

  //===-- export slots --===//

  struct export_slot {
    basic_node* node = nullptr;
    std::uint64_t id = 0;
    observer_type observer{};
    bool (*uninstall)(void* sem, const observer_type* o) noexcept = nullptr;
    bool (*next_pending)(void* sem, std::uint64_t after, update_record& out) noexcept = nullptr;
    // Guarded by the node's mutex_.
    bool installed = false;

    // The semaphore, while it may be read: set to null (under `life`) by
    // withdraw, shutdown and the semaphore's destructor; held by poll()
    // while it re-reads submitted records.
    std::mutex life;
    void* sem = nullptr;

    // Written by the hooks (under the semaphore's lock and the node's
    // news_lock_), read by poll() under news_lock_.
    std::array<update_record, Traits::outbox_capacity> outbox{};
    std::size_t outbox_count = 0;
    bool resync = false;
    bool failed = false;  ///< the failure is in the news
    bool gone = false;    ///< the end of the export is in the news
    /// Sequence number of the slot's latest entry in the news (0: none).
    std::uint64_t last_entry = 0;
    /// The latest value reached while the batch was full (0: none), with
    /// its record and its place among all such values (see
    /// record_reached_locked).
    std::uint64_t catch_up = 0;
    std::uint64_t catch_up_order = 0;
    update_record catch_up_record{};
    bool catch_up_external = false;  ///< the latest folded value was external
    bool catch_up_witnessed = false;  ///< a witnessed value was folded in
    /// A failure or end that found the batch full: sent after it.
    std::optional<error> tail_failure{};
    std::optional<error> tail_gone{};
    /// On the node's slot list (slot-level news: outbox, catch-up, tail)
    /// until poll() takes it.
    bool queued = false;
    export_slot* next_news = nullptr;

    // poll() only: what flush_news took from the slot, and what the
    // subscribers have been sent (the snapshot a new one gets).
    export_slot* next_taken = nullptr;
    std::uint64_t taken_catch_up = 0;
    std::uint64_t taken_last_entry = 0;
    bool taken_catch_up_external = false;
    bool taken_catch_up_witnessed = false;
    std::optional<error> taken_tail_failure{};
    std::optional<error> taken_tail_gone{};
    update_record shown{};            ///< latest witnessed value sent (0: none)
    std::uint64_t shown_external = 0;  ///< latest external value sent
    std::optional<error> shown_failure{};
    std::optional<error> shown_gone{};
    std::vector<std::uint32_t> subscribers{};
    std::atomic<std::size_t> subscriber_count{0};
  };

  /// One entry of the ordered news.
  enum class news_kind : std::uint8_t { reached, external, failed, gone };
  struct news_entry {
    export_slot* slot = nullptr;
    news_kind kind = news_kind::reached;
    update_record record{};  ///< reached: the value's record; external: its value
    error failure{};         ///< failed, gone
  };
  /// The hooks fill one batch while poll() sends the other.
  struct news_batch {
    std::unique_ptr<news_entry[]> entries;
    std::size_t count = 0;
    std::uint64_t first_seq = 1;  ///< sequence number of entries[0]
  };

  //===-- proxy slots --===//

  struct proxy_slot {
    std::uint32_t owner = 0;
    std::uint64_t id = 0;
    Semaphore sem;
    // poll() only.
    bool node_failed = false;
    bool closed = false;
    /// The value the node last reached the proxy to (only the node signals
    /// it): what causal delivery reads instead of the semaphore's payload.
    std::uint64_t reached = 0;
    /// Bounds on the values of the submitted signals announced on the
    /// proxy and not reached (records_high 0: none): every one is in
    /// [records_low, records_high]. A REACHED that would pass some of them
    /// other than its own value checks their frontiers (on_reached).
    std::uint64_t records_low = 0;
    std::uint64_t records_high = 0;
    /// The owner's failure text, NUL-terminated: the proxy's error points
    /// here, so it lives as long as the proxy.
    char text[max_failure_text + 1] = {};
  };

  struct proxy_key {
    std::uint32_t owner;
    std::uint64_t id;
    friend bool operator==(const proxy_key&, const proxy_key&) noexcept = default;
  };
  struct proxy_key_hash {
    std::size_t operator()(const proxy_key& k) const noexcept {
      // splitmix64 finaliser over (owner, id): ids are often small and dense.
      std::uint64_t x = k.id ^ (std::uint64_t{k.owner} << 40) ^ 0x9e3779b97f4a7c15ull;
      x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
      x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
      return static_cast<std::size_t>(x ^ (x >> 31));
    }
  };

  //===-- causal delivery (poll() only; the file comment, "Causal delivery") --===//

  /// A submitted signal announced on a proxy with a producer entry: a
  /// queue whose knowledge covers that entry elides its wait on it, so no
  /// claim of the producer from another owner may apply before the proxy
  /// reaches the value. Kept until the proxy reaches it or fails.
  struct watched_record {
    proxy_slot* proxy = nullptr;
    std::uint64_t value = 0;
    std::uint64_t epoch = 0;  ///< the producer's epoch (its axis: the axis_state's)
  };

  /// What poll() knows of one axis that received news named.
  struct axis_state {
    /// The highest epoch of the axis that a reached frontier of owner
    /// `heard_from` claimed, and the highest any other owner claimed.
    std::uint64_t heard = 0;
    std::uint64_t heard_elsewhere = 0;
    std::uint32_t heard_from = 0;
    /// Every record's proxy owner, unless `mixed` (records of one axis
    /// normally all come from the rank that runs its queue).
    std::uint32_t owner = 0;
    bool mixed = false;
    /// At most the least producer epoch in `records` (~0 when empty):
    /// the cheap test that no record can be covered.
    std::uint64_t min_epoch = ~std::uint64_t{0};
    /// Announced submitted signals this axis produced, not known reached,
    /// in records[0, count): dropped when the check finds them reached or
    /// failed, and before the vector (always at its full size) would grow.
    std::vector<watched_record> records{};
    std::size_t count = 0;

    void hear(std::uint64_t epoch, std::uint32_t from) noexcept {
      if (from == heard_from) {
        if (epoch > heard) heard = epoch;
      } else if (epoch > heard) {
        // The old best came from another owner than `from`: it is now the
        // best of the others.
        heard_elsewhere = heard;
        heard = epoch;
        heard_from = from;
      } else if (epoch > heard_elsewhere) {
        heard_elsewhere = epoch;
      }
    }
    /// The highest epoch an owner other than `owner_rank` claimed.
    [[nodiscard]] std::uint64_t heard_except(std::uint32_t owner_rank) const noexcept {
      return owner_rank == heard_from ? heard_elsewhere : heard;
    }
  };

  struct axis_hash {
    std::size_t operator()(axis a) const noexcept {
      // Fibonacci hashing, folded so that the low bits (the table's index)
      // depend on every field of the axis: looked up once per entry of
      // every received frontier, so cheaper than the splitmix finaliser.
      const std::uint64_t x = a.raw() * 0x9e3779b97f4a7c15ull;
      return static_cast<std::size_t>(x ^ (x >> 32));
    }
  };

  /// One message held in a peer's order (its bytes in the peer's
  /// held_bytes).
  struct held_message {
    std::size_t offset = 0;
    std::size_t size = 0;
    errc damaged = errc::ok;  ///< decode() refused it, with this code
  };

  //===-- peers --===//

  struct peer_state {
    // Written by poll() under mutex_ (peer() reads them).
    bool hello_seen = false;
    bool lost = false;
    error lost_error{};
    std::uint64_t heartbeat_interval_us = 0;
    std::uint32_t frontier_capacity = 0;
    std::vector<frontier_entry> axes{};
    std::vector<std::uint64_t> exports{};
    // poll() only.
    bool hello_done = false;
    std::chrono::steady_clock::time_point last_heard{};
    std::chrono::steady_clock::time_point last_sent{};
    std::optional<error> pending_loss{};
    std::size_t early_subscriptions = 0;
    /// Heard from (1) or sent to (2) in this poll before its clock read;
    /// stamped with the clock when it is read.
    std::uint8_t touched = 0;
    /// The peer's proxy news (SUBMITTED, REACHED, FAILED, BYE) held in
    /// arrival order behind a REACHED that waits for another owner's news
    /// (empty: none held); released from held_next on.
    std::vector<std::byte> held_bytes{};
    std::vector<held_message> held{};
    std::size_t held_next = 0;
  };

  //===-- requests from other threads --===//

  enum class control_kind : std::uint8_t { subscribe, unsubscribe, exported };
  struct control {
    control_kind kind;
    std::uint32_t owner;
    std::uint64_t id;
    /// The proxy_slot (subscribe, unsubscribe) or export_slot (exported)
    /// the request is about; null for a peer's SUBSCRIBE.
    void* slot = nullptr;
  };

  /// An open-addressing hash table from keys to slots, owned by the
  /// progress context, so its lookups take no lock: poll() enters what
  /// other threads hand it through the control queue, and looks up every
  /// received message here. Never shrinks; grows (allocates) at half full.
  template <class Key, class Hash, class T>
  class poll_table {
   public:
    [[nodiscard]] T* find(const Key& k) const noexcept {
      if (entries_.empty()) return nullptr;
      const std::size_t mask = entries_.size() - 1;
      for (std::size_t i = Hash{}(k) & mask;; i = (i + 1) & mask) {
        const entry& e = entries_[i];
        if (e.value == nullptr) return nullptr;
        if (e.key == k) return e.value;
      }
    }
    /// Enters k -> v (k not present yet). False, with nothing changed, when
    /// memory runs out.
    [[nodiscard]] bool insert(const Key& k, T* v) noexcept {
      if ((count_ + 1) * 2 > entries_.size()) {
        std::vector<entry> bigger;
        try {
          bigger.resize(entries_.empty() ? 16 : entries_.size() * 2);
        } catch (...) {
          return false;
        }
        for (const entry& e : entries_) {
          if (e.value != nullptr) place(bigger, e.key, e.value);
        }
        entries_.swap(bigger);
      }
      place(entries_, k, v);
      ++count_;
      return true;
    }

   private:
    struct entry {
      Key key{};
      T* value = nullptr;
    };
    static void place(std::vector<entry>& to, const Key& k, T* v) noexcept {
      const std::size_t mask = to.size() - 1;
      std::size_t i = Hash{}(k) & mask;
      while (to[i].value != nullptr) i = (i + 1) & mask;
      to[i] = entry{k, v};
    }
    std::vector<entry> entries_{};
    std::size_t count_ = 0;
  };

  struct id_hash {
    std::size_t operator()(std::uint64_t id) const noexcept { return proxy_key_hash{}(proxy_key{0, id}); }
  };

  struct atomic_counters {
    std::atomic<std::uint64_t> messages_sent{0}, bytes_sent{0}, messages_received{0}, bytes_received{0},
        malformed{0}, protocol_errors{0}, updates_ignored{0}, submitted_dropped{0}, submitted_covered{0},
        reached_held{0}, messages_held{0}, submitted_applied{0},
        reached_applied{0}, proxies_failed{0}, submitted_sent{0}, reached_sent{0}, failed_sent{0},
        reached_coalesced{0}, reached_without_frontier{0}, submitted_superseded{0}, resyncs{0},
        heartbeats_sent{0}, send_failures{0}, peers_lost{0};
  };

  static void bump(std::atomic<std::uint64_t>& c, std::uint64_t n = 1) noexcept {
    // Only the progress context writes the counters (one thread at a time,
    // handed over through polling_), so a plain load and store add without
    // a locked read-modify-write; atomic only so that stats() may read
    // them from any thread. relaxed: counters order nothing.
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }

  //===-- hooks: under the exported semaphore's lock --===//

  static void hook_submitted(void* context, const observed_signal<frontier_type>& ev) noexcept {
    export_slot& slot = *static_cast<export_slot*>(context);
    basic_node& n = *slot.node;
    bool wake = false;
    {
      causal::detail::spin_guard guard(n.news_lock_);
      if (slot.gone) return;
      if (slot.resync) {
        // poll() re-reads every outstanding record anyway.
      } else if (slot.outbox_count == Traits::outbox_capacity) {
        // Everything in the outbox is still in the semaphore (or reached):
        // drop it and let poll() re-read.
        slot.resync = true;
        slot.outbox_count = 0;
      } else {
        update_record& r = slot.outbox[slot.outbox_count++];
        r.value = ev.value;
        r.frontier = *ev.frontier;
        r.producer = ev.producer;
      }
      wake = n.queue_slot_locked(slot);
    }
    if (wake) n.kick();
  }

  static void hook_reached(void* context, const observed_signal<frontier_type>& ev) noexcept {
    export_slot& slot = *static_cast<export_slot*>(context);
    basic_node& n = *slot.node;
    bool wake = false;
    {
      causal::detail::spin_guard guard(n.news_lock_);
      if (slot.gone) return;
      wake = n.record_reached_locked(slot, ev);
      // A reached value supersedes the submitted records at or below it:
      // the proxy would drop them anyway.
      std::size_t kept = 0;
      for (std::size_t i = 0; i < slot.outbox_count; ++i) {
        if (slot.outbox[i].value > ev.value) {
          if (kept != i) slot.outbox[kept] = slot.outbox[i];
          ++kept;
        }
      }
      n.superseded_ += slot.outbox_count - kept;
      slot.outbox_count = kept;
    }
    if (wake) n.kick();
  }

  static void hook_failed(void* context, const error& e) noexcept {
    export_slot& slot = *static_cast<export_slot*>(context);
    basic_node& n = *slot.node;
    bool wake = false;
    {
      causal::detail::spin_guard guard(n.news_lock_);
      if (slot.gone || slot.failed) return;
      slot.failed = true;
      wake = n.record_end_locked(slot, news_kind::failed, e);
    }
    if (wake) n.kick();
  }

  static void hook_destroyed(void* context) noexcept {
    export_slot& slot = *static_cast<export_slot*>(context);
    {
      // Waits for a poll() that is re-reading the semaphore.
      std::lock_guard life(slot.life);
      slot.sem = nullptr;
    }
    slot.node->mark_gone(slot, error{errc::cancelled, "the exported semaphore was destroyed", slot.id});
  }

  //===-- the news (under news_lock_) --===//

  /// Notes that the node has news; true when it had none, and the caller
  /// must kick() the driver after unlocking.
  bool note_news_locked() noexcept {
    if (news_pending_.load(std::memory_order_relaxed)) return false;
    // seq_cst: the hook's side of the sleep hand-off with a driver, which
    // announces it sleeps and then reads has_work().
    news_pending_.store(true, std::memory_order_seq_cst);
    return true;
  }

  /// Puts `slot` on the slot list (its slot-level news: outbox, catch-up,
  /// tail) unless it is there; returns note_news_locked().
  bool queue_slot_locked(export_slot& slot) noexcept {
    if (!slot.queued) {
      slot.queued = true;
      slot.next_news = slot_news_;
      slot_news_ = &slot;
    }
    return note_news_locked();
  }

  /// Appends reached value `ev` of `slot` to the ordered news. It folds
  /// into the slot's previous entry only when that entry is the batch's
  /// last (nothing of another export came in between): folding across
  /// another export's entry would move this value behind news that may
  /// claim it, or the other's ahead of it. A full batch takes no entry:
  /// the value becomes the slot's catch-up, sent right after the slot's
  /// last entry as an external value (a value early, claiming nothing),
  /// or -- for the latest catch-up of all, which nothing that follows can
  /// claim -- last, with its frontier.
  bool record_reached_locked(export_slot& slot, const observed_signal<frontier_type>& ev) noexcept {
    news_batch& b = batches_[filling_];
    const news_kind kind = ev.external ? news_kind::external : news_kind::reached;
    // The latest ordered news of all, a catch-up or a tail included, is
    // this slot's entry: fold into it.
    if (run_slot_ == &slot && b.count != 0 && b.entries[b.count - 1].kind == kind) {
      news_entry& e = b.entries[b.count - 1];
      e.record.value = ev.value;
      if (!ev.external) {
        e.record.frontier = *ev.frontier;
        e.record.producer = ev.producer;
      }
      ++coalesced_;
      return note_news_locked();
    }
    if (b.count < Traits::news_capacity) {
      news_entry& e = b.entries[b.count++];
      e.slot = &slot;
      e.kind = kind;
      e.record.value = ev.value;
      if (!ev.external) {
        e.record.frontier = *ev.frontier;
        e.record.producer = ev.producer;
      }
      slot.last_entry = b.first_seq + b.count - 1;
      run_slot_ = &slot;
      return note_news_locked();
    }
    run_slot_ = nullptr;
    slot.catch_up = ev.value;
    slot.catch_up_order = ++catch_up_order_;
    slot.catch_up_external = ev.external;
    if (!ev.external) {
      slot.catch_up_witnessed = true;
      slot.catch_up_record.value = ev.value;
      slot.catch_up_record.frontier = *ev.frontier;
      slot.catch_up_record.producer = ev.producer;
    }
    return queue_slot_locked(slot);
  }

  /// Appends the slot's failure or end (`kind`), or, when the batch is
  /// full, keeps it to send after the batch.
  bool record_end_locked(export_slot& slot, news_kind kind, const error& e) noexcept {
    news_batch& b = batches_[filling_];
    if (b.count < Traits::news_capacity) {
      news_entry& entry = b.entries[b.count++];
      entry.slot = &slot;
      entry.kind = kind;
      entry.record.value = 0;
      entry.failure = e;
      slot.last_entry = b.first_seq + b.count - 1;
      run_slot_ = nullptr;
      return note_news_locked();
    }
    run_slot_ = nullptr;
    (kind == news_kind::failed ? slot.tail_failure : slot.tail_gone) = e;
    return queue_slot_locked(slot);
  }

  void mark_gone(export_slot& slot, const error& why) noexcept {
    bool wake = false;
    {
      causal::detail::spin_guard guard(news_lock_);
      if (slot.gone) return;
      slot.gone = true;
      slot.outbox_count = 0;
      slot.resync = false;
      wake = record_end_locked(slot, news_kind::gone, why);
    }
    if (wake) kick();
  }

  void kick() noexcept {
    // No driver to wake (polled by hand): no lock. A kick that reads false
    // here runs no waker; one that reads true re-checks under the lock, so
    // set_waker's promise holds (no call of a replaced waker after it).
    if (!has_waker_.load(std::memory_order_seq_cst)) return;
    causal::detail::spin_guard guard(waker_lock_);
    if (waker_ != nullptr) waker_(waker_context_);
  }

  void note_control() noexcept {
    control_pending_.store(true, std::memory_order_seq_cst);
    kick();
  }

  /// Under mutex_.
  void push_control(const control& c) noexcept {
    try {
      controls_.push_back(c);
    } catch (...) {
      // Out of memory: the request is lost. A subscribe then never goes
      // out; the proxy is failed instead so that nothing waits forever.
      lost_controls_ = true;
    }
  }

  /// Reads the next outstanding submitted record of `sem` above `after`,
  /// through the public frontier_at (one lock per record).
  template <class S>
  static bool next_pending_of(void* sem, std::uint64_t after, update_record& out) noexcept {
    S& s = *static_cast<S*>(sem);
    std::uint64_t v = after;
    for (;;) {
      if (v == ~std::uint64_t{0}) return false;
      ++v;
      const auto found = s.frontier_at(v);
      if (!found) return false;
      if (found->reached) {
        // Reached meanwhile: continue above the payload.
        const std::uint64_t now = s.value();
        if (now > v) v = now;
        continue;
      }
      out.value = found->signal_value;
      out.frontier = found->frontier;
      out.producer = found->producer;
      return true;
    }
  }

  [[nodiscard]] export_slot* find_export(std::uint64_t id) const noexcept {
    std::lock_guard lock(mutex_);
    auto it = exports_.find(id);
    if (it == exports_.end() || !it->second->installed) return nullptr;
    return it->second.get();
  }

  [[nodiscard]] proxy_slot* find_proxy(std::uint32_t owner, std::uint64_t id) const noexcept {
    std::lock_guard lock(mutex_);
    auto it = proxies_.find(proxy_key{owner, id});
    return it == proxies_.end() ? nullptr : it->second.get();
  }

  /// poll()'s lookups: its own tables, no lock (the mutex only after an
  /// entry could not be made for want of memory). A proxy is entered when
  /// poll() sends its SUBSCRIBE, so every update for it finds it; an
  /// export when poll() takes its `exported` request (a SUBSCRIBE before
  /// that waits as an early subscription, as for an id not exported yet).
  [[nodiscard]] proxy_slot* poll_proxy(std::uint32_t owner, std::uint64_t id) const noexcept {
    if (proxy_table_incomplete_) [[unlikely]] return find_proxy(owner, id);
    return proxy_table_.find(proxy_key{owner, id});
  }
  [[nodiscard]] export_slot* poll_export(std::uint64_t id) const noexcept {
    if (export_table_incomplete_) [[unlikely]] return find_export(id);
    return export_table_.find(id);
  }

  /// Removes the observer and makes the slot gone with `why`.
  void end_export(export_slot& slot, const error& why) noexcept {
    {
      std::lock_guard life(slot.life);
      if (slot.sem != nullptr) {
        (void)slot.uninstall(slot.sem, &slot.observer);
        slot.sem = nullptr;
      }
    }
    mark_gone(slot, why);
  }

  void withdraw_all() noexcept {
    std::vector<export_slot*> all;
    {
      std::lock_guard lock(mutex_);
      try {
        all.reserve(exports_.size());
      } catch (...) {
      }
      for (auto& [id, slot] : exports_) {
        if (slot->installed) {
          // reserve() may have failed: fall back to ending it here, under
          // the node's mutex (uninstall takes only the semaphore's lock).
          if (all.size() < all.capacity()) {
            all.push_back(slot.get());
          } else {
            end_export(*slot, error{errc::cancelled, "the owner node shut down", id});
          }
        }
      }
    }
    for (export_slot* slot : all) end_export(*slot, error{errc::cancelled, "the owner node shut down", slot->id});
  }

  //===-- sending --===//

  /// Inserts `e` into `list` (sorted by axis), or raises the epoch of the
  /// entry already there.
  static status merge_axis(std::vector<frontier_entry>& list, frontier_entry e) noexcept {
    auto it = std::lower_bound(list.begin(), list.end(), e.axis,
                               [](const frontier_entry& x, axis a) { return x.axis < a; });
    if (it != list.end() && it->axis == e.axis) {
      it->epoch = std::max(it->epoch, e.epoch);
      return {};
    }
    try {
      list.insert(it, e);
    } catch (...) {
      return error{errc::resource_exhausted, "node: out of memory for an axis", e.axis.raw()};
    }
    return {};
  }

  /// Sends the axes announced since HELLO (taken from late_axes_ by
  /// drain_control) to every peer, in AXES messages that fit buffer_.
  std::size_t send_late_axes() noexcept {
    if (late_work_.empty()) return 0;
    constexpr std::size_t per_message =
        (sizeof(buffer_) - wire_header_size - 10) / detail::hello_axis_bound;
    static_assert(per_message >= 1, "node: buffer_ holds no AXES entry");
    std::size_t sent = 0;
    for (std::size_t first = 0; first < late_work_.size(); first += per_message) {
      const std::size_t count = std::min(per_message, late_work_.size() - first);
      const result<std::size_t> n =
          encode_axes(std::span<std::byte>(buffer_), std::span<const frontier_entry>(late_work_.data() + first, count));
      send_to_every_peer(encoded(n));
      ++sent;
    }
    late_work_.clear();
    return sent;
  }

  /// Reads the clock into now_ and stamps the peers heard from or sent to
  /// earlier in this poll with it.
  void read_clock() noexcept {
    now_ = clock_.now();
    now_valid_ = true;
    busy_polls_ = 0;
    for (const std::uint32_t r : touched_ranks_) {
      peer_state& p = peers_[r];
      if ((p.touched & touched_heard) != 0) p.last_heard = now_;
      if ((p.touched & touched_sent) != 0) p.last_sent = now_;
      p.touched = 0;
    }
    touched_ranks_.clear();
  }

  /// Records that `r` was heard from (touched_heard) or sent to
  /// (touched_sent) now: at once when the clock was read in this poll,
  /// else when it is.
  void touch(std::uint32_t r, std::uint8_t what) noexcept {
    peer_state& p = peers_[r];
    if (now_valid_) {
      if (what == touched_heard) p.last_heard = now_;
      if (what == touched_sent) p.last_sent = now_;
      return;
    }
    // touched_ranks_ has room for every rank (reserved at construction).
    if (p.touched == 0) touched_ranks_.push_back(r);
    p.touched = static_cast<std::uint8_t>(p.touched | what);
  }

  void set_pending_loss(peer_state& p, const error& why) noexcept {
    p.pending_loss = why;
    loss_pending_ = true;
  }

  void send_bytes(std::uint32_t to, std::span<const std::byte> bytes) noexcept {
    peer_state& p = peers_[to];
    if (p.lost || p.pending_loss) return;
    const status s = carrier_->send(to, bytes);
    if (!s) {
      bump(counters_.send_failures);
      set_pending_loss(p, s.error_value());
      return;
    }
    touch(to, touched_sent);
    bump(counters_.messages_sent);
    bump(counters_.bytes_sent, bytes.size());
  }

  /// Sends `bytes` to every other rank of the job.
  void send_to_every_peer(std::span<const std::byte> bytes) noexcept {
    for (std::uint32_t r = 0; r < size_; ++r) {
      if (r != rank_) send_bytes(r, bytes);
    }
  }

  std::span<const std::byte> encoded(const result<std::size_t>& n) const noexcept {
    CAUSAL_ASSERT(n.ok(), "node: an update did not fit max_update_size");
    return std::span<const std::byte>(buffer_.data(), n.ok() ? *n : 0);
  }

  std::size_t send_to_all(const std::vector<std::uint32_t>& to, std::span<const std::byte> bytes,
                          std::atomic<std::uint64_t>& counter) noexcept {
    for (const std::uint32_t peer : to) send_bytes(peer, bytes);
    bump(counter, to.size());
    return to.size();
  }

  std::size_t send_hello() noexcept {
    hello_sent_ = true;
    for (peer_state& p : peers_) {
      p.last_heard = now_;
      p.last_sent = now_;
    }
    std::vector<frontier_entry> axes;
    std::vector<std::uint64_t> ids;
    try {
      std::lock_guard lock(mutex_);
      // From here announce_axis also queues for AXES: whatever this copy
      // misses goes out after HELLO.
      hello_taken_ = true;
      axes = own_axes_;
      for (const auto& [id, slot] : exports_) {
        if (slot->installed) ids.push_back(id);
      }
    } catch (...) {
      axes.clear();
      ids.clear();
    }
    std::sort(ids.begin(), ids.end());
    hello_fields fields;
    fields.rank = rank_;
    fields.size = size_;
    fields.session = options_.session;
    fields.layout = hello_fields::layout_of<layout_type>();
    fields.heartbeat_interval_us = static_cast<std::uint64_t>(options_.heartbeat_interval.count());
    fields.frontier_capacity = static_cast<std::uint32_t>(frontier_type::capacity);
    // One part when it all fits, else parts cut by upper bounds per entry.
    const std::size_t budget = std::min<std::size_t>(Carrier::max_message_bytes, std::size_t{1} << 20);
    std::vector<std::byte> buffer;
    try {
      buffer.resize(budget);
    } catch (...) {
      return 0;
    }
    std::size_t axes_sent = 0;
    std::size_t ids_sent = 0;
    std::size_t parts = 0;
    do {
      std::size_t room = budget - detail::hello_fixed_bound;
      const std::size_t take_axes = std::min(axes.size() - axes_sent, room / detail::hello_axis_bound);
      room -= take_axes * detail::hello_axis_bound;
      const std::size_t take_ids = std::min(ids.size() - ids_sent, room / detail::hello_export_bound);
      fields.more = axes_sent + take_axes < axes.size() || ids_sent + take_ids < ids.size();
      const result<std::size_t> n =
          encode_hello(std::span<std::byte>(buffer), fields,
                       std::span<const frontier_entry>(axes.data() + axes_sent, take_axes),
                       std::span<const std::uint64_t>(ids.data() + ids_sent, take_ids));
      if (!n) break;
      send_to_every_peer(std::span<const std::byte>(buffer.data(), *n));
      axes_sent += take_axes;
      ids_sent += take_ids;
      ++parts;
    } while (fields.more);
    return parts;
  }

  void send_failed_to(std::uint32_t to, std::uint64_t id, const error& e) noexcept {
    const result<std::size_t> n = encode_failed(std::span<std::byte>(buffer_), id, e);
    send_bytes(to, encoded(n));
    bump(counters_.failed_sent);
  }

  //===-- receiving --===//

  static void on_message_thunk(void* context, std::uint32_t from, std::span<const std::byte> bytes) noexcept {
    static_cast<basic_node*>(context)->on_message(from, bytes);
  }

  void note_error(std::uint32_t from, const error& e) noexcept {
    std::lock_guard lock(mutex_);
    if (!last_error_) {
      last_error_ = e;
      last_error_rank_ = from;
    }
  }

  void protocol_error(std::uint32_t from, const error& e) noexcept {
    bump(counters_.protocol_errors);
    note_error(from, e);
  }

  void on_message(std::uint32_t from, std::span<const std::byte> bytes) noexcept {
    bump(counters_.messages_received);
    bump(counters_.bytes_received, bytes.size());
    if (from >= size_ || from == rank_) {
      protocol_error(from, error{errc::invalid_argument, "message from a rank outside the job (or from itself)", from});
      return;
    }
    peer_state& p = peers_[from];
    if (p.lost) {
      bump(counters_.updates_ignored);
      return;
    }
    // Into the node's one message: no ~450-byte message built per receive.
    message<frontier_type>& m = incoming_;
    if (const status decoded = decode_into<frontier_type>(bytes, m); !decoded) {
      bump(counters_.malformed);
      note_error(from, decoded.error_value());
      if (!p.held.empty()) [[unlikely]] {
        // It may fail a proxy whose earlier news are held: after them.
        hold(from, bytes, decoded.error_value().code());
        return;
      }
      on_damaged(from, bytes, decoded.error_value());
      return;
    }
    touch(from, touched_heard);
    if (!p.hello_seen && m.kind != message_kind::hello) {
      protocol_error(from, error{errc::failed_precondition, "message before the sender's HELLO", from});
      return;
    }
    if (!p.held.empty() && in_owner_order(m.kind)) [[unlikely]] {
      hold(from, bytes);
      return;
    }
    switch (m.kind) {
      case message_kind::hello: on_hello(from, m.hello); break;
      case message_kind::subscribe:
        try {
          subscribe_requests_.push_back(control{control_kind::subscribe, from, m.id});
        } catch (...) {
          protocol_error(from, error{errc::resource_exhausted, "out of memory for a subscription", from});
        }
        break;
      case message_kind::unsubscribe: remove_subscriber(m.id, from); break;
      case message_kind::submitted: on_submitted(from, m); break;
      case message_kind::reached:
        if (!on_reached(from, m)) [[unlikely]] {
          bump(counters_.reached_held);
          hold(from, bytes);
        }
        break;
      case message_kind::failed: on_failed(from, m); break;
      case message_kind::bye:
        queue_loss(from, error{errc::cancelled, "the owner rank left the job (BYE)", from});
        break;
      case message_kind::heartbeat: break;
      case message_kind::axes: on_axes(from, m.axes); break;
    }
  }

  /// The kinds a peer's proxy news consist of: applied in the sender's
  /// order, so held behind a held one. (HELLO, SUBSCRIBE, UNSUBSCRIBE,
  /// HEARTBEAT and AXES are not news of this rank's proxies and go on.)
  static constexpr bool in_owner_order(message_kind k) noexcept {
    return k == message_kind::submitted || k == message_kind::reached || k == message_kind::failed ||
           k == message_kind::bye;
  }

  /// Applies one of `from`'s held proxy news; false (nothing done) when it
  /// is a REACHED that must still wait (on_reached).
  bool apply_news(std::uint32_t from, const message<frontier_type>& m) noexcept {
    switch (m.kind) {
      case message_kind::submitted: on_submitted(from, m); return true;
      case message_kind::reached: return on_reached(from, m);
      case message_kind::failed: on_failed(from, m); return true;
      case message_kind::bye:
        queue_loss(from, error{errc::cancelled, "the owner rank left the job (BYE)", from});
        return true;
      default: return true;
    }
  }

  /// A rejected message that still names a proxy's update stream.
  void on_damaged(std::uint32_t from, std::span<const std::byte> bytes, const error& why) noexcept {
    const auto named = peek_id(bytes);
    if (!named) return;
    if (named->first != message_kind::reached && named->first != message_kind::failed) return;
    proxy_slot* slot = poll_proxy(from, named->second);
    if (slot == nullptr || slot->closed) return;
    fail_proxy(*slot, error{why.code(), "an update for this proxy could not be parsed (see node stats)", from});
  }

  void on_hello(std::uint32_t from, const hello_info& h) noexcept {
    peer_state& p = peers_[from];
    if (p.hello_done) {
      protocol_error(from, error{errc::failed_precondition, "a second HELLO", from});
      return;
    }
    if (h.rank != from || h.size != size_ || h.session != options_.session ||
        h.layout != hello_fields::layout_of<layout_type>()) {
      protocol_error(from, error{errc::invalid_argument, "HELLO from a rank of another job (rank, size, session or "
                                                         "axis layout differ)", from});
      queue_loss(from, error{errc::invalid_argument, "the rank's HELLO disagrees with this job", from});
      return;
    }
    std::lock_guard lock(mutex_);
    p.hello_seen = true;
    p.heartbeat_interval_us = h.heartbeat_interval_us;
    p.frontier_capacity = h.frontier_capacity;
    try {
      for (const frontier_entry e : h.axes) {
        if (!axis_of(from, e.axis)) {
          bump(counters_.protocol_errors);
          continue;
        }
        p.axes.push_back(e);
      }
      for (const std::uint64_t id : h.exports) p.exports.push_back(id);
    } catch (...) {
      // Advisory lists: a short copy is all that is lost.
    }
    if (!h.more) p.hello_done = true;
  }

  /// True when `a` is an axis rank `r` may announce: its machine and this
  /// job's session (HELLO and AXES refuse the others).
  [[nodiscard]] bool axis_of(std::uint32_t r, axis a) const noexcept {
    return layout_type::machine(a) == r && layout_type::session(a) == options_.session;
  }

  /// Axes `from` announced after its HELLO: kept like HELLO's (the
  /// higher epoch wins), so they are failed too if `from` is lost.
  void on_axes(std::uint32_t from, const axis_list& axes) noexcept {
    peer_state& p = peers_[from];
    std::optional<error> refused;
    {
      std::lock_guard lock(mutex_);
      for (const frontier_entry e : axes) {
        if (!axis_of(from, e.axis)) {
          if (!refused) refused = error{errc::invalid_argument, "AXES names an axis of another rank or session", from};
          continue;
        }
        auto it = std::find_if(p.axes.begin(), p.axes.end(), [&](const frontier_entry& x) { return x.axis == e.axis; });
        if (it != p.axes.end()) {
          it->epoch = std::max(it->epoch, e.epoch);
          continue;
        }
        try {
          p.axes.push_back(e);
        } catch (...) {
          // Advisory like HELLO's lists: the axis is not failed on loss.
          if (!refused) refused = error{errc::resource_exhausted, "out of memory for an announced axis", from};
          break;
        }
      }
    }
    if (refused) protocol_error(from, *refused);
  }

  void on_submitted(std::uint32_t from, const message<frontier_type>& m) noexcept {
    proxy_slot* slot = poll_proxy(from, m.id);
    if (slot == nullptr || slot->closed || slot->node_failed) {
      bump(counters_.updates_ignored);
      return;
    }
    if (slot->sem.value() >= m.value) {
      bump(counters_.updates_ignored);
      return;
    }
    if (slot->sem.pending_count() >= Traits::max_proxy_pending) {
      bump(counters_.submitted_dropped);
      return;
    }
    // A record with a producer is what a queue elides a wait on when its
    // knowledge covers the producer (tier 1, dominated; queue.hpp). So:
    // not announced at all once another owner's news claimed the producer
    // complete -- a queue here may already know that claim while this
    // proxy's REACHED is still on its way; and else watched, so that no
    // such claim applies before the proxy reaches it (on_reached). Not
    // announcing is always sound: a wait on the value is then a device
    // wait, or held on the host, until the value arrives.
    axis_state* watch = nullptr;
    if (m.producer.epoch != 0) {
      watch = axis_table_.find(m.producer.axis);
      if (watch == nullptr) [[unlikely]] watch = track_axis(m.producer.axis);
      if (watch == nullptr ||
          (watch->count == watch->records.size() && !make_room(*watch))) [[unlikely]] {
        bump(counters_.submitted_dropped);
        return;
      }
      if (watch->heard_except(from) >= m.producer.epoch) {
        bump(counters_.submitted_covered);
        return;
      }
    }
    if (slot->sem.submit_signal_as(this, m.value, m.frontier, m.producer)) {
      bump(counters_.submitted_applied);
      if (watch != nullptr) add_record(*watch, watched_record{slot, m.value, m.producer.epoch});
      if (slot->records_high == 0) {
        slot->records_low = slot->records_high = m.value;
      } else {
        slot->records_low = std::min(slot->records_low, m.value);
        slot->records_high = std::max(slot->records_high, m.value);
      }
    } else {
      // Already submitted, reached meanwhile, or failed.
      bump(counters_.updates_ignored);
    }
  }

  /// Applies a REACHED; false, doing nothing, when its frontier claims a
  /// signal a proxy of another owner has not reached yet (claims_ahead):
  /// then it waits, with what its sender sent after it, until that proxy
  /// reaches the value or fails (release_held).
  CAUSAL_ALWAYS_INLINE bool on_reached(std::uint32_t from, const message<frontier_type>& m) noexcept {
    proxy_slot* slot = poll_proxy(from, m.id);
    if (slot == nullptr || slot->closed || slot->node_failed || slot->sem.value() >= m.value) {
      bump(counters_.updates_ignored);
      return true;
    }
    // The frontier it claims: the message's (none for an external value),
    // which holds the one the proxy's submitted signal of exactly this
    // value carries (the owner's semaphore merged it in when it reached
    // the value). A queue here that issued a device wait on a submitted
    // value imported that signal's frontier at submit time, so the
    // frontiers of the signals this value passes are claims too:
    // checked when there may be such (records_low), each under one lock
    // of the proxy -- not for a pipeline that reaches its signals one by
    // one.
    if (!m.external && claims_ahead(from, m.frontier)) [[unlikely]] return false;
    const bool has_records = slot->records_high != 0;
    if (has_records && (slot->records_low < m.value || (m.external && slot->records_low == m.value)) &&
        records_claim_ahead(*slot, from, m.value, m.external)) [[unlikely]] {
      return false;
    }
    const status s = m.external ? slot->sem.signal_external_as(this, m.value)
                                : slot->sem.signal_as(this, m.value, m.frontier, m.producer);
    if (s) {
      bump(counters_.reached_applied);
      slot->reached = m.value;
      // A held REACHED may wait for this value.
      release_due_ = true;
    } else {
      bump(counters_.updates_ignored);
    }
    // The proxy is at m.value now (or failed): its records up to it are gone.
    if (has_records) {
      if (slot->records_high <= m.value) {
        slot->records_high = 0;
      } else if (slot->records_low <= m.value) {
        slot->records_low = m.value + 1;
      }
    }
    return true;
  }

  /// Checks, as claims_ahead does, the frontiers of the submitted signals
  /// announced on `slot` that reaching `value` passes: below it, or at it
  /// for an external value.
  CAUSAL_NOINLINE bool records_claim_ahead(proxy_slot& slot, std::uint32_t from, std::uint64_t value, bool external) noexcept {
    bool ahead = false;
    for (std::uint64_t w = std::max(slot.records_low, slot.sem.value() + 1);;) {
      // The submitted signal of the lowest value >= w, if any.
      const auto next = slot.sem.frontier_at(w);
      if (!next || next->reached || next->signal_value > value) break;
      if ((next->signal_value < value || external) && claims_ahead(from, next->frontier)) ahead = true;
      if (next->signal_value == value) break;
      w = next->signal_value + 1;
    }
    return ahead;
  }

  //===-- causal delivery (the file comment) --===//

  /// Notes what reached frontier `f` from `from` claims (each axis's
  /// highest epoch per owner, for on_submitted), and returns true when it
  /// covers the producer of a submitted signal that a proxy of another
  /// owner holds and has not reached. A proxy of `from` itself needs no
  /// check: `from` sends its news in the order its semaphores reached
  /// them, so that value arrived first. Per entry: one table lookup and,
  /// unless the axis has a record of another owner at or below the
  /// claimed epoch (min_epoch, owner), nothing more.
  CAUSAL_ALWAYS_INLINE bool claims_ahead(std::uint32_t from, const frontier_type& f) noexcept {
    const auto axes = f.axes();
    const auto epochs = f.epochs();
    bool ahead = false;
    for (std::size_t i = 0; i < axes.size(); ++i) {
      axis_state* s = axis_table_.find(axes[i]);
      if (s == nullptr) [[unlikely]] {
        s = track_axis(axes[i]);
        // Untracked (the table is full): no record of this axis is ever
        // announced (on_submitted), so there is nothing to check or note.
        if (s == nullptr) continue;
      }
      s->hear(epochs[i], from);
      if (s->count != 0 && epochs[i] >= s->min_epoch && (s->mixed || s->owner != from)) {
        if (unreached_at_or_below(*s, epochs[i], from)) ahead = true;
      }
    }
    return ahead;
  }

  /// Drops the records of `s` that their proxies reached or that failed,
  /// and returns true when one is left of an owner other than `from` with
  /// a producer epoch at most `epoch`.
  CAUSAL_NOINLINE bool unreached_at_or_below(axis_state& s, std::uint64_t epoch, std::uint32_t from) noexcept {
    prune_records(s);
    for (std::size_t i = 0; i < s.count; ++i) {
      if (s.records[i].epoch <= epoch && s.records[i].proxy->owner != from) return true;
    }
    return false;
  }

  /// Keeps the records of `s` still outstanding (the proxy below the
  /// value, not failed) and recomputes min_epoch, owner and mixed.
  static void prune_records(axis_state& s) noexcept {
    std::size_t kept = 0;
    s.min_epoch = ~std::uint64_t{0};
    s.mixed = false;
    for (std::size_t i = 0; i < s.count; ++i) {
      const watched_record r = s.records[i];
      if (r.proxy->node_failed || r.proxy->reached >= r.value) continue;
      if (kept == 0) {
        s.owner = r.proxy->owner;
      } else if (r.proxy->owner != s.owner) {
        s.mixed = true;
      }
      s.min_epoch = std::min(s.min_epoch, r.epoch);
      s.records[kept++] = r;
    }
    s.count = kept;
  }

  /// Makes room for one more record in `s` (full): first drops those no
  /// longer outstanding (so a steady stream reuses the vector), then grows
  /// it. False when memory runs out.
  CAUSAL_NOINLINE static bool make_room(axis_state& s) noexcept {
    prune_records(s);
    if (s.count < s.records.size()) return true;
    try {
      s.records.resize(std::max<std::size_t>(8, s.records.size() * 2));
    } catch (...) {
      return false;
    }
    return true;
  }

  /// Appends `r` (room made by make_room).
  CAUSAL_ALWAYS_INLINE static void add_record(axis_state& s, const watched_record& r) noexcept {
    if (s.count == 0) {
      s.owner = r.proxy->owner;
      s.mixed = false;
    } else if (r.proxy->owner != s.owner) {
      s.mixed = true;
    }
    s.min_epoch = std::min(s.min_epoch, r.epoch);
    s.records[s.count++] = r;  // room made: never allocates
  }

  /// The state of axis `a`, entered the first time (allocates); null when
  /// the table is full or memory ran out -- then, and from then on, no new
  /// axis is entered: a claim that could not be noted must not be missed
  /// by a record entered later.
  CAUSAL_NOINLINE axis_state* track_axis(axis a) noexcept {
    if (axis_state* s = axis_table_.find(a)) return s;
    if (axes_untracked_ || axis_states_.size() >= Traits::max_tracked_axes) {
      axes_untracked_ = true;
      return nullptr;
    }
    std::unique_ptr<axis_state> fresh(new (std::nothrow) axis_state);
    bool entered = false;
    if (fresh) {
      try {
        if (axis_states_.size() == axis_states_.capacity()) {
          axis_states_.reserve(std::max<std::size_t>(16, axis_states_.capacity() * 2));
        }
        entered = axis_table_.insert(a, fresh.get());
      } catch (...) {
        entered = false;
      }
    }
    if (!entered) {
      axes_untracked_ = true;
      return nullptr;
    }
    axis_states_.push_back(std::move(fresh));  // reserved above
    return axis_states_.back().get();
  }

  /// Appends a message of `from` to its held news (in arrival order);
  /// `damaged`: decode() refused it with that code (on_damaged runs when
  /// it is released). A peer past Traits::max_held_messages, or when memory
  /// runs out, is lost: its held news would otherwise grow without bound.
  CAUSAL_NOINLINE void hold(std::uint32_t from, std::span<const std::byte> bytes, errc damaged = errc::ok) noexcept {
    peer_state& p = peers_[from];
    if (p.held.size() - p.held_next >= Traits::max_held_messages) {
      queue_loss(from, error{errc::resource_exhausted,
                             "the rank's news waited for another rank's beyond max_held_messages", from});
      return;
    }
    try {
      if (p.held.size() == p.held.capacity()) p.held.reserve(std::max<std::size_t>(16, p.held.capacity() * 2));
      const std::size_t at = p.held_bytes.size();
      if (p.held_bytes.capacity() - at < bytes.size()) {
        // At least 1 KiB: a few messages, whatever their sizes, before
        // the first growth.
        p.held_bytes.reserve(std::max({p.held_bytes.capacity() * 2, at + bytes.size(), std::size_t{1024}}));
      }
      p.held_bytes.insert(p.held_bytes.end(), bytes.begin(), bytes.end());
      p.held.push_back(held_message{at, bytes.size(), damaged});  // reserved above
    } catch (...) {
      queue_loss(from, error{errc::resource_exhausted, "out of memory for the rank's held news", from});
      return;
    }
    if (p.held.size() == 1) ++holding_peers_;
    bump(counters_.messages_held);
  }

  /// Applies held news, each peer's in its order, as far as each can go;
  /// repeats while anything moved (news released from one peer can
  /// release another's). Runs when a proxy reached a value or failed
  /// since the last time (release_due_).
  CAUSAL_NOINLINE std::size_t release_held() noexcept {
    std::size_t work = 0;
    while (release_due_ && holding_peers_ != 0) {
      release_due_ = false;
      for (std::uint32_t r = 0; r < size_; ++r) {
        peer_state& p = peers_[r];
        while (p.held_next < p.held.size()) {
          const held_message h = p.held[p.held_next];
          const std::span<const std::byte> bytes(p.held_bytes.data() + h.offset, h.size);
          if (h.damaged != errc::ok) {
            on_damaged(r, bytes, error{h.damaged, "held"});
          } else {
            // It decoded when it arrived; decoding the same bytes again
            // cannot fail. (No message is received meanwhile: incoming_
            // and held_bytes are free.)
            message<frontier_type>& m = incoming_;
            if (decode_into<frontier_type>(bytes, m) && !apply_news(r, m)) break;
          }
          ++p.held_next;
          ++work;
        }
        if (!p.held.empty() && p.held_next == p.held.size()) drop_held(p);
      }
    }
    return work;
  }

  /// Forgets `p`'s held news (released, or the peer or this node is gone).
  void drop_held(peer_state& p) noexcept {
    if (p.held.empty()) return;
    p.held.clear();
    p.held_bytes.clear();
    p.held_next = 0;
    --holding_peers_;
  }

  void on_failed(std::uint32_t from, const message<frontier_type>& m) noexcept {
    proxy_slot* slot = poll_proxy(from, m.id);
    if (slot == nullptr || slot->closed || slot->node_failed) {
      bump(counters_.updates_ignored);
      return;
    }
    const char* text = "the owner failed the exported semaphore";
    if (!m.failure.text.empty()) {
      std::memcpy(slot->text, m.failure.text.data(), m.failure.text.size());
      slot->text[m.failure.text.size()] = '\0';
      text = slot->text;
    }
    fail_proxy(*slot, error{m.failure.code, text, m.failure.position});
  }

  void fail_proxy(proxy_slot& slot, const error& e) noexcept {
    if (slot.node_failed) return;
    slot.node_failed = true;
    bump(counters_.proxies_failed);
    (void)slot.sem.fail(e);
    // A held REACHED may wait for a value this proxy can now never reach.
    release_due_ = true;
  }

  //===-- owner side --===//

  void remove_subscriber(std::uint64_t id, std::uint32_t peer) noexcept {
    export_slot* slot = poll_export(id);
    if (slot == nullptr) {
      // Maybe an early subscription.
      auto it = early_.find(id);
      if (it != early_.end()) {
        auto& ranks = it->second;
        const auto before = ranks.size();
        ranks.erase(std::remove(ranks.begin(), ranks.end(), peer), ranks.end());
        peers_[peer].early_subscriptions -= before - ranks.size();
      }
      return;
    }
    auto& subs = slot->subscribers;
    subs.erase(std::remove(subs.begin(), subs.end(), peer), subs.end());
    slot->subscriber_count.store(subs.size(), std::memory_order_relaxed);
  }

  std::size_t answer_subscriptions() noexcept {
    std::size_t work = 0;
    for (const control& c : subscribe_requests_) {
      if (peers_[c.owner].lost) continue;
      work += subscribe(c.id, c.owner);
    }
    subscribe_requests_.clear();
    return work;
  }

  /// Adds `peer` to export `id` (or to the early list) and sends it the
  /// export's state.
  std::size_t subscribe(std::uint64_t id, std::uint32_t peer) noexcept {
    export_slot* slot = poll_export(id);
    if (slot == nullptr) {
      peer_state& p = peers_[peer];
      if (p.early_subscriptions >= Traits::max_early_subscriptions) {
        send_failed_to(peer, id, error{errc::resource_exhausted,
                                       "too many subscriptions to ids the owner has not exported", id});
        return 1;
      }
      try {
        auto& ranks = early_[id];
        if (std::find(ranks.begin(), ranks.end(), peer) == ranks.end()) {
          ranks.push_back(peer);
          ++p.early_subscriptions;
        }
      } catch (...) {
        send_failed_to(peer, id, error{errc::resource_exhausted, "the owner ran out of memory for a subscription", id});
      }
      return 1;
    }
    // Every news taken so far goes out first, and the snapshot is the state
    // it leaves: the export's value then follows (on `peer`'s side too) the
    // news of other exports the owner reached before it, which that value
    // may claim (file comment, "Order"). A snapshot read from the live
    // slot could be newer than news still waiting in the batch.
    std::size_t work = flush_news();
    auto& subs = slot->subscribers;
    if (std::find(subs.begin(), subs.end(), peer) == subs.end()) {
      try {
        subs.push_back(peer);
      } catch (...) {
        send_failed_to(peer, id, error{errc::resource_exhausted, "the owner ran out of memory for a subscription", id});
        return work + 1;
      }
      slot->subscriber_count.store(subs.size(), std::memory_order_relaxed);
    }
    return work + send_snapshot(*slot, peer);
  }

  /// Sends `peer` the export's state as its subscribers have been sent it:
  /// the reached record(s), then the failure or the end of the export (a
  /// value reached before either stays reached on the proxy, however late
  /// it is opened), else every outstanding submitted record (re-read from
  /// the semaphore).
  std::size_t send_snapshot(export_slot& slot, std::uint32_t peer) noexcept {
    std::size_t sent = 0;
    if (slot.shown.value != 0) {
      send_bytes(peer, encoded(encode_reached(std::span<std::byte>(buffer_), slot.id, slot.shown.value,
                                              slot.shown.frontier, slot.shown.producer)));
      bump(counters_.reached_sent);
      ++sent;
    }
    if (slot.shown_external > slot.shown.value) {
      send_bytes(peer, encoded(encode_reached_external(std::span<std::byte>(buffer_), slot.id, slot.shown_external)));
      bump(counters_.reached_sent);
      ++sent;
    }
    if (slot.shown_failure || slot.shown_gone) {
      // The owner's failure wins over the end: it is what the proxy of an
      // earlier subscriber failed with.
      send_failed_to(peer, slot.id, slot.shown_failure ? *slot.shown_failure : *slot.shown_gone);
      if (slot.shown_gone) {
        auto& subs = slot.subscribers;
        subs.erase(std::remove(subs.begin(), subs.end(), peer), subs.end());
        slot.subscriber_count.store(subs.size(), std::memory_order_relaxed);
      }
      return sent + 1;
    }
    sent += send_pending(slot, std::max(slot.shown.value, slot.shown_external), &peer);
    return sent;
  }

  /// Re-reads the outstanding submitted records above `after` from the
  /// semaphore and sends each to `only` (or every subscriber).
  std::size_t send_pending(export_slot& slot, std::uint64_t after, const std::uint32_t* only) noexcept {
    std::lock_guard life(slot.life);
    if (slot.sem == nullptr) return 0;
    std::size_t sent = 0;
    update_record& r = scratch_pending_;
    while (slot.next_pending(slot.sem, after, r)) {
      const auto bytes = encoded(encode_submitted(std::span<std::byte>(buffer_), slot.id, r.value, r.frontier,
                                                  r.producer));
      if (only != nullptr) {
        send_bytes(*only, bytes);
        bump(counters_.submitted_sent);
        ++sent;
      } else {
        sent += send_to_all(slot.subscribers, bytes, counters_.submitted_sent);
      }
      after = r.value;
    }
    return sent;
  }

  /// Takes the ordered news and the slots' news and sends them: SUBMITTED
  /// first (order-free), then the batch in order with the catch-ups, then
  /// the failures that found the batch full, then the latest catch-up (see
  /// record_reached_locked).
  std::size_t flush_news() noexcept {
    // A plain load first: an idle poll takes no cache line exclusive. A
    // hook's news after this load is seen by the next poll (has_work()
    // keeps a sleeping driver from missing it).
    if (!news_pending_.load(std::memory_order_relaxed)) return 0;
    news_batch* taken = nullptr;
    export_slot* slots = nullptr;
    export_slot* last = nullptr;  // the slot with the latest catch-up
    update_record& last_record = scratch_catch_up_;
    {
      causal::detail::spin_guard guard(news_lock_);
      news_pending_.store(false, std::memory_order_relaxed);
      taken = &batches_[filling_];
      filling_ ^= 1;
      news_batch& next = batches_[filling_];
      next.count = 0;
      next.first_seq = taken->first_seq + taken->count;
      run_slot_ = nullptr;
      std::uint64_t latest = 0;
      for (export_slot* s = std::exchange(slot_news_, nullptr); s != nullptr; s = s->next_news) {
        s->queued = false;
        s->next_taken = slots;
        slots = s;
        s->taken_catch_up = std::exchange(s->catch_up, 0);
        s->taken_catch_up_external = s->catch_up_external;
        s->taken_catch_up_witnessed = std::exchange(s->catch_up_witnessed, false);
        s->taken_last_entry = s->last_entry;
        s->taken_tail_failure = std::exchange(s->tail_failure, std::nullopt);
        s->taken_tail_gone = std::exchange(s->tail_gone, std::nullopt);
        if (s->taken_catch_up != 0 && s->catch_up_order > latest) {
          latest = s->catch_up_order;
          last = s;
        }
      }
      // The hooks may overwrite the slot's catch-up record once the new
      // batch fills: copy the one sent with its frontier now.
      if (last != nullptr && !last->taken_catch_up_external) last_record = last->catch_up_record;
      bump(counters_.reached_coalesced, std::exchange(coalesced_, 0));
      bump(counters_.submitted_superseded, std::exchange(superseded_, 0));
    }
    // An axis announced before a signal that names it goes first (see
    // announce_axis).
    std::size_t work = send_announced_axes();
    for (export_slot* s = slots; s != nullptr; s = s->next_taken) work += send_outbox(*s);
    // Catch-ups of slots with no entry in this batch: before all of it.
    for (export_slot* s = slots; s != nullptr; s = s->next_taken) {
      if (s != last && s->taken_catch_up != 0 && s->taken_last_entry < taken->first_seq) work += send_catch_up(*s);
    }
    for (std::size_t i = 0; i < taken->count; ++i) {
      const news_entry& e = taken->entries[i];
      work += send_entry(e);
      export_slot& s = *e.slot;
      if (&s != last && s.taken_catch_up != 0 && s.taken_last_entry == taken->first_seq + i) {
        work += send_catch_up(s);
      }
    }
    for (export_slot* s = slots; s != nullptr; s = s->next_taken) {
      if (s != last) work += send_tails(*s);
    }
    if (last != nullptr) {
      if (last->taken_catch_up_external) {
        work += send_catch_up(*last);
      } else {
        last->taken_catch_up = 0;
        work += send_reached(*last, last_record);
      }
      work += send_tails(*last);
    }
    return work;
  }

  /// Sends one entry of the ordered news and records it for snapshots.
  std::size_t send_entry(const news_entry& e) noexcept {
    export_slot& slot = *e.slot;
    switch (e.kind) {
      case news_kind::reached: return send_reached(slot, e.record);
      case news_kind::external: return send_external(slot, e.record.value);
      case news_kind::failed: return send_failure(slot, e.failure);
      case news_kind::gone: return send_gone(slot, e.failure);
    }
    return 0;
  }

  std::size_t send_reached(export_slot& slot, const update_record& r) noexcept {
    slot.shown = r;
    if (slot.subscribers.empty()) return 0;
    return send_to_all(slot.subscribers,
                       encoded(encode_reached(std::span<std::byte>(buffer_), slot.id, r.value, r.frontier, r.producer)),
                       counters_.reached_sent);
  }

  std::size_t send_external(export_slot& slot, std::uint64_t v) noexcept {
    slot.shown_external = std::max(slot.shown_external, v);
    if (slot.subscribers.empty()) return 0;
    return send_to_all(slot.subscribers, encoded(encode_reached_external(std::span<std::byte>(buffer_), slot.id, v)),
                       counters_.reached_sent);
  }

  std::size_t send_failure(export_slot& slot, const error& e) noexcept {
    if (!slot.shown_failure) slot.shown_failure = e;
    if (slot.subscribers.empty()) return 0;
    return send_to_all(slot.subscribers, encoded(encode_failed(std::span<std::byte>(buffer_), slot.id, e)),
                       counters_.failed_sent);
  }

  std::size_t send_gone(export_slot& slot, const error& e) noexcept {
    if (!slot.shown_gone) slot.shown_gone = e;
    if (slot.subscribers.empty()) return 0;
    const std::size_t sent = send_to_all(
        slot.subscribers, encoded(encode_failed(std::span<std::byte>(buffer_), slot.id, e)), counters_.failed_sent);
    slot.subscribers.clear();
    slot.subscriber_count.store(0, std::memory_order_relaxed);
    return sent;
  }

  /// The slot's catch-up as an external value: it claims nothing, so it
  /// may go ahead of news reached before it (record_reached_locked).
  std::size_t send_catch_up(export_slot& slot) noexcept {
    const std::uint64_t v = std::exchange(slot.taken_catch_up, 0);
    // Counted where a witnessed value's frontier is lost (an external
    // signal's value has none).
    if (slot.taken_catch_up_witnessed) bump(counters_.reached_without_frontier);
    return send_external(slot, v);
  }

  std::size_t send_tails(export_slot& slot) noexcept {
    std::size_t sent = 0;
    if (slot.taken_tail_failure) sent += send_failure(slot, *std::exchange(slot.taken_tail_failure, std::nullopt));
    if (slot.taken_tail_gone) sent += send_gone(slot, *std::exchange(slot.taken_tail_gone, std::nullopt));
    return sent;
  }

  /// Takes the slot's submitted records (one lock hold) and sends them;
  /// re-reads them all from the semaphore after an outbox overflow.
  std::size_t send_outbox(export_slot& slot) noexcept {
    std::size_t n = 0;
    bool resync = false;
    {
      causal::detail::spin_guard guard(news_lock_);
      n = slot.outbox_count;
      for (std::size_t i = 0; i < n; ++i) scratch_outbox_[i] = slot.outbox[i];
      slot.outbox_count = 0;
      resync = std::exchange(slot.resync, false);
    }
    if (resync) bump(counters_.resyncs);
    if (slot.subscribers.empty()) return 0;
    // Submitted records are order-free (file comment, "Order"): the
    // re-read starts above what the subscribers were sent and skips
    // values reached meanwhile.
    if (resync) return send_pending(slot, std::max(slot.shown.value, slot.shown_external), nullptr);
    std::size_t sent = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const update_record& r = scratch_outbox_[i];
      sent += send_to_all(slot.subscribers,
                          encoded(encode_submitted(std::span<std::byte>(buffer_), slot.id, r.value, r.frontier,
                                                   r.producer)),
                          counters_.submitted_sent);
    }
    return sent;
  }

  /// Sends the axes announced since the last send (announce_axis).
  std::size_t send_announced_axes() noexcept {
    if (!axes_pending_.load(std::memory_order_seq_cst)) return 0;
    {
      std::lock_guard lock(mutex_);
      axes_pending_.store(false, std::memory_order_relaxed);
      late_work_.swap(late_axes_);  // late_work_ is empty between sends
    }
    return send_late_axes();
  }

  //===-- requests from other threads --===//

  std::size_t drain_control() noexcept {
    if (!control_pending_.load(std::memory_order_seq_cst)) return 0;
    control_pending_.store(false, std::memory_order_seq_cst);
    bool lost = false;
    {
      std::lock_guard lock(mutex_);
      control_work_.swap(controls_);
      lost = std::exchange(lost_controls_, false);
      axes_pending_.store(false, std::memory_order_relaxed);
      late_work_.swap(late_axes_);
    }
    // Axes first: news sent below may name them.
    std::size_t work = send_late_axes();
    for (const control& c : control_work_) {
      switch (c.kind) {
        case control_kind::subscribe:
          work += send_subscribe(c.owner, c.id, static_cast<proxy_slot*>(c.slot));
          break;
        case control_kind::unsubscribe:
          work += send_unsubscribe(c.owner, c.id, static_cast<proxy_slot*>(c.slot));
          break;
        case control_kind::exported:
          if (!export_table_.insert(c.id, static_cast<export_slot*>(c.slot))) export_table_incomplete_ = true;
          work += attach_early(c.id);
          break;
      }
    }
    control_work_.clear();
    if (lost) fail_unsubscribed_proxies();
    return work;
  }

  std::size_t send_subscribe(std::uint32_t owner, std::uint64_t id, proxy_slot* slot) noexcept {
    if (!proxy_table_.insert(proxy_key{owner, id}, slot)) proxy_table_incomplete_ = true;
    if (slot->closed) return 0;
    peer_state& p = peers_[owner];
    if (p.lost) {
      fail_proxy(*slot, p.lost_error);
      return 1;
    }
    send_bytes(owner, encoded(encode_subscribe(std::span<std::byte>(buffer_), id)));
    return 1;
  }

  std::size_t send_unsubscribe(std::uint32_t owner, std::uint64_t id, proxy_slot* slot) noexcept {
    if (slot->closed) return 0;
    slot->closed = true;
    if (!peers_[owner].lost) send_bytes(owner, encoded(encode_unsubscribe(std::span<std::byte>(buffer_), id)));
    fail_proxy(*slot, error{errc::cancelled, "the proxy was closed", id});
    return 1;
  }

  /// A request was lost to memory exhaustion: fail every proxy that may
  /// never have been subscribed, rather than leave one waiting.
  void fail_unsubscribed_proxies() noexcept {
    for_each_proxy([&](proxy_slot& s) {
      if (!s.closed && s.sem.value() == 0 && s.sem.pending_count() == 0) {
        fail_proxy(s, error{errc::resource_exhausted, "the node ran out of memory for its subscription", s.id});
      }
    });
  }

  std::size_t attach_early(std::uint64_t id) noexcept {
    auto it = early_.find(id);
    if (it == early_.end()) return 0;
    std::vector<std::uint32_t> ranks = std::move(it->second);
    early_.erase(it);
    std::size_t work = 0;
    for (const std::uint32_t peer : ranks) {
      if (peers_[peer].early_subscriptions != 0) --peers_[peer].early_subscriptions;
      if (!peers_[peer].lost) work += subscribe(id, peer);
    }
    return work;
  }

  /// Calls `fn` on every proxy, outside the node's mutex (fn may fail a
  /// proxy, whose callbacks may call into the node).
  template <class Fn>
  void for_each_proxy(Fn fn) noexcept {
    proxy_scratch_.clear();
    {
      std::lock_guard lock(mutex_);
      try {
        proxy_scratch_.reserve(proxies_.size());
      } catch (...) {
      }
      for (auto& [key, slot] : proxies_) {
        if (proxy_scratch_.size() < proxy_scratch_.capacity()) proxy_scratch_.push_back(slot.get());
      }
    }
    for (proxy_slot* s : proxy_scratch_) fn(*s);
    proxy_scratch_.clear();
  }

  //===-- liveness --===//

  std::size_t check_peers() noexcept {
    if (now_ < next_check_) return 0;
    const auto interval = std::chrono::duration_cast<std::chrono::steady_clock::duration>(options_.heartbeat_interval);
    const auto timeout = std::chrono::duration_cast<std::chrono::steady_clock::duration>(options_.heartbeat_timeout);
    // Check about four times per interval (or timeout), not on every poll.
    auto step = interval.count() != 0 ? interval / 4 : timeout / 4;
    if (step.count() == 0) step = std::chrono::steady_clock::duration(1);
    next_check_ = now_ + step;
    std::size_t work = 0;
    for (std::uint32_t r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      peer_state& p = peers_[r];
      if (p.lost || p.pending_loss) continue;
      if (const status s = carrier_->peer_status(r); !s) {
        set_pending_loss(p, s.error_value());
        continue;
      }
      if (timeout.count() != 0 && now_ - p.last_heard >= timeout) {
        set_pending_loss(p, p.hello_seen
                                ? error{errc::timeout, "the rank stopped responding (heartbeat timeout)", r}
                                : error{errc::timeout, "no HELLO from the rank within the heartbeat timeout", r});
        continue;
      }
      if (interval.count() != 0 && now_ - p.last_sent >= interval) {
        send_bytes(r, encoded(encode_heartbeat(std::span<std::byte>(buffer_))));
        bump(counters_.heartbeats_sent);
        ++work;
      }
    }
    return work;
  }

  void queue_loss(std::uint32_t r, const error& why) noexcept {
    peer_state& p = peers_[r];
    if (!p.lost && !p.pending_loss) set_pending_loss(p, why);
  }

  std::size_t lose_pending_peers() noexcept {
    if (!loss_pending_) return 0;
    loss_pending_ = false;
    std::size_t work = 0;
    for (std::uint32_t r = 0; r < size_; ++r) {
      if (peers_[r].pending_loss && !peers_[r].lost) {
        lose_peer(r, *peers_[r].pending_loss);
        ++work;
      }
    }
    return work;
  }

  /// The peer is gone: fail its proxies, drop its subscriptions, fail its
  /// axes in the tracker, tell the handler.
  void lose_peer(std::uint32_t r, const error& why) noexcept {
    peer_state& p = peers_[r];
    {
      std::lock_guard lock(mutex_);
      if (p.lost) return;
      p.lost = true;
      p.lost_error = why;
      p.pending_loss.reset();
      for (auto& [id, slot] : exports_) {
        auto& subs = slot->subscribers;
        subs.erase(std::remove(subs.begin(), subs.end(), r), subs.end());
        slot->subscriber_count.store(subs.size(), std::memory_order_relaxed);
      }
    }
    bump(counters_.peers_lost);
    // Its held news go with it (its proxies fail below).
    drop_held(p);
    for (auto& [id, ranks] : early_) ranks.erase(std::remove(ranks.begin(), ranks.end(), r), ranks.end());
    p.early_subscriptions = 0;
    for_each_proxy([&](proxy_slot& s) {
      if (s.owner == r && !s.closed) fail_proxy(s, why);
    });
    if (fail_axis_ != nullptr) {
      for (const frontier_entry& e : p.axes) fail_axis_(tracker_, e.axis, why);
    }
    if (peer_lost_ != nullptr) peer_lost_(peer_lost_context_, r, why);
  }

  //===-- shutdown --===//

  void do_shutdown() noexcept {
    if (closed_) return;
    read_clock();
    if (started_.load(std::memory_order_acquire) && !hello_sent_) {
      // Started but never polled: say HELLO first, or peers would refuse
      // the BYE (a message before HELLO) and wait for their proxies of
      // this rank until a heartbeat timeout -- forever with none.
      (void)send_hello();
    }
    if (hello_sent_) {
      (void)drain_control();
      (void)flush_news();
      send_to_every_peer(encoded(encode_bye(std::span<std::byte>(buffer_))));
    }
    {
      // From here open_proxy and export_semaphore refuse.
      std::lock_guard lock(mutex_);
      closed_flag_.store(true, std::memory_order_release);
    }
    for_each_proxy([&](proxy_slot& s) {
      if (!s.closed) fail_proxy(s, error{errc::cancelled, "this node shut down", rank_});
    });
    // Held news are for proxies that have just failed.
    for (peer_state& p : peers_) drop_held(p);
    withdraw_all();
    closed_ = true;
    {
      // Drop the news shutdown made: nothing is sent after BYE, and no
      // hook runs any more (withdraw_all removed the observers).
      causal::detail::spin_guard guard(news_lock_);
      for (news_batch& b : batches_) b.count = 0;
      run_slot_ = nullptr;
      for (export_slot* s = std::exchange(slot_news_, nullptr); s != nullptr; s = s->next_news) s->queued = false;
      news_pending_.store(false, std::memory_order_relaxed);
    }
    control_pending_.store(false, std::memory_order_relaxed);
  }

  //===-- data --===//

  // Immutable after construction.
  Carrier* carrier_;
  node_options options_;
  [[no_unique_address]] Clock clock_;
  std::uint32_t rank_;
  std::uint32_t size_;
  basic_rank_axis_allocator<layout_type> axes_;

  // Shared with other threads.
  mutable std::mutex mutex_;  // tables, controls, peer lists, last error
  std::unordered_map<std::uint64_t, std::unique_ptr<export_slot>> exports_;
  std::unordered_map<proxy_key, std::unique_ptr<proxy_slot>, proxy_key_hash> proxies_;
  std::vector<control> controls_;
  bool lost_controls_ = false;
  std::vector<frontier_entry> own_axes_;
  bool hello_taken_ = false;                // HELLO copied own_axes_
  std::vector<frontier_entry> late_axes_;   // announced since, not sent yet
  std::optional<error> last_error_{};
  std::uint32_t last_error_rank_ = 0;
  std::atomic<bool> started_{false};
  std::atomic<bool> closed_flag_{false};
  std::atomic<bool> shutdown_requested_{false};
  std::atomic<bool> control_pending_{false};
  std::atomic<bool> axes_pending_{false};  // late_axes_ has entries to send
  causal::detail::spin_lock waker_lock_;
  waker_fn waker_ = nullptr;
  void* waker_context_ = nullptr;
  std::atomic<bool> has_waker_{false};  // waker_ != nullptr; written under waker_lock_
  atomic_counters counters_{};

  // The news: written by the export hooks (any thread, under the exported
  // semaphore's lock) and taken by poll(), all under news_lock_, on lines
  // of their own.
  alignas(CAUSAL_CACHELINE_SIZE) causal::detail::spin_lock news_lock_;
  std::atomic<bool> news_pending_{false};   // anything below to send
  std::array<news_batch, 2> batches_{};     // [filling_] takes the hooks' entries
  std::size_t filling_ = 0;
  export_slot* run_slot_ = nullptr;         // whose entry the latest ordered news is (null: none)
  export_slot* slot_news_ = nullptr;        // slots with slot-level news
  std::uint64_t catch_up_order_ = 0;        // orders the catch-ups of all slots
  std::uint64_t coalesced_ = 0;             // counted into counters_ by poll()
  std::uint64_t superseded_ = 0;

  // Set before start().
  peer_lost_fn peer_lost_ = nullptr;
  void* peer_lost_context_ = nullptr;
  void (*fail_axis_)(void*, axis, const error&) noexcept = nullptr;
  void* tracker_ = nullptr;

  // The progress context's own.
  alignas(CAUSAL_CACHELINE_SIZE) std::atomic<bool> polling_{false};
  bool closed_ = false;
  bool hello_sent_ = false;
  std::chrono::steady_clock::time_point now_{};
  bool now_valid_ = false;  // now_ was read in this poll
  /// Busy polls in a row that skipped the clock read; the next one reads.
  static constexpr std::uint32_t busy_polls_per_clock_read = 16;
  std::uint32_t busy_polls_ = 0;
  bool loss_pending_ = false;  // some peer has a pending_loss
  static constexpr std::uint8_t touched_heard = 1;
  static constexpr std::uint8_t touched_sent = 2;
  std::vector<std::uint32_t> touched_ranks_;
  poll_table<proxy_key, proxy_key_hash, proxy_slot> proxy_table_;
  poll_table<std::uint64_t, id_hash, export_slot> export_table_;
  // An entry could not be made (out of memory): look up under the mutex.
  bool proxy_table_incomplete_ = false;
  bool export_table_incomplete_ = false;
  std::chrono::steady_clock::time_point next_check_{};
  std::vector<peer_state> peers_;
  std::vector<control> control_work_;
  std::vector<frontier_entry> late_work_;  // late_axes_ taken by drain_control
  std::vector<control> subscribe_requests_;
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> early_;
  std::vector<proxy_slot*> proxy_scratch_;
  // Causal delivery (the file comment): the axes received news named, and
  // the peers whose news are held.
  poll_table<axis, axis_hash, axis_state> axis_table_;
  std::vector<std::unique_ptr<axis_state>> axis_states_;
  bool axes_untracked_ = false;  // an axis could not be entered: none will be
  std::size_t holding_peers_ = 0;  // peers with held news
  bool release_due_ = false;       // a proxy reached a value or failed since release_held last ran
  std::array<std::byte, std::max(max_update_size<frontier_type>, max_failed_size)> buffer_{};
  std::unique_ptr<update_record[]> scratch_outbox_;
  update_record scratch_catch_up_{};
  update_record scratch_pending_{};
  message<frontier_type> incoming_{};
};

/// A node over `Carrier` with causal::semaphore proxies and the defaults.
template <carrier Carrier>
using node = basic_node<Carrier>;

}  // namespace mpi

CAUSAL_END_NAMESPACE
