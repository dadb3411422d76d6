// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// mpi_carrier: the MPI transport of the MPI adapter -- a `causal::mpi::carrier`
// that moves the node's small messages between the ranks of an MPI job over
// point-to-point messages on a private communicator.
//
// Model. `create()` duplicates a communicator (MPI_COMM_WORLD by default:
// a collective call, so every rank of it creates its carrier at the same
// point), sets MPI_ERRORS_RETURN on the duplicate and pre-posts K persistent
// receives (MPI_Recv_init on MPI_ANY_SOURCE, one tag, Traits::
// max_message_bytes each). `send()` copies the bytes into one of P pooled
// send buffers and starts an MPI_Isend. When the pool is empty, or the peer
// already has C sends in flight (Traits::max_in_flight_per_peer), or older
// messages to that peer wait, the message joins that peer's FIFO queue (the
// only place that allocates), which later polls drain in order. The cap C
// keeps a dead peer, whose sends never complete, from pinning the whole pool
// and stalling traffic to everyone else (heartbeats included) until it is
// marked departed. `poll()` is the carrier's only progress:
//
//   poll(handler, context)
//     0. the receives the previous poll delivered are restarted with
//        MPI_Start, oldest first (deferred to here so that a poll that
//        delivers returns without paying for the restart)
//     1. sends: MPI_Testsome over the in-flight sends; finished ones give
//        their buffer back to the pool; the peers' queues refill the pool,
//        each in order, the peers taken round-robin
//     2. receives: MPI_Test on the oldest posted receive (the ring head),
//        which MPI completes first (see "Ordering"); when it completed, it
//        is delivered to `handler`. MPI_Test runs MPI's progress between
//        two checks, so a message arriving during this poll's progress is
//        delivered by this poll. At most one message per poll: a burst
//        takes one poll a message (each finds its message at the first
//        check, without running MPI's progress again)
//
//   receive ring (K = Traits::receive_slots)     send pool (P = Traits::send_slots)
//   +----+----+----+----+                         free list -> [slot][slot]...
//   | r0 | r1 | r2 | r3 |  <- head: oldest post   in flight  -> MPI_Isend requests (<= C a peer)
//   +----+----+----+----+     restart -> tail     per peer   -> FIFO byte queue (grows)
//
// Ordering. Messages between one sender and one receiver arrive in the
// order they were sent (FIFO per pair). In flight, MPI's non-overtaking rule
// (same communicator, tag and source) orders them; a message that queues
// goes behind everything queued before it for the same peer (while a peer
// has queued messages, every later send to it queues too). On the receiving
// side, messages match the posted receives in posting order, so the ring is
// delivered strictly from its head: a receive that completed ahead of an
// earlier-posted one (possible only for messages above MPI's eager limit)
// waits for it. No order holds between different senders.
//
// Peers. `peer_status(p)` is ok until p becomes unreachable: an MPI call
// about p failed (MPI_Isend, or a send's or a receive's status), or the
// user called `mark_departed(p, why)` (e.g. a missed heartbeat). From then
// on sends to p return that error, messages from p are dropped, queued
// sends to p are discarded and in-flight ones are cancelled or abandoned
// (below), which gives their pool slots back. A failure not tied to one peer (MPI_Testsome itself failed, a
// receive could not be restarted) breaks the whole carrier: every later call
// returns it. Every MPI failure is recorded with MPI_Error_string's text in
// `last_failure()`; the returned `error` carries a literal message naming the
// call and, as its position, the peer's rank (or the failed size).
//
// What Open MPI 4.1.4 does when a rank dies (measured on this project's
// 2-vCPU VM, ob1 + shared-memory BTL "vader", 3 ranks; details and the
// commands in adapters/mpi/README.md, "Failures"):
//   - default mpiexec: a rank ending without MPI_Finalize (_exit(0),
//     _exit(1), abort(), SIGKILL) or calling MPI_Abort ends the job. The
//     survivors see NO error from any MPI call (MPI_Isend, MPI_Testsome,
//     MPI_Test all return MPI_SUCCESS with MPI_ERRORS_RETURN); about 1.0 s
//     after the death mpiexec sends them SIGTERM (then SIGKILL 1 s later if
//     they survive it: odls_base_sigkill_timeout). MPI_Abort: SIGTERM
//     within 3 ms. mpiexec exits non-zero.
//   - with recovery (mpiexec --enable-recovery, or the environment variable
//     OMPI_MCA_orte_enable_recovery=1) the survivors run on, and still see
//     no error at all: sends to the dead rank stop completing (they stay in
//     flight for good), MPI_Cancel on them has no effect (neither completed
//     nor cancelled after 1 s of MPI_Test), MPI_Request_free then lets
//     MPI_Comm_free and MPI_Finalize return; mpiexec then exits 0 whatever
//     the survivors return. With messages above the eager limit (1 MiB
//     sends) MPI_Finalize hung. Over the TCP BTL, runs varied: some ended
//     cleanly, some hung inside MPI calls after "writev failed: Connection
//     reset by peer".
//   - a rank that calls MPI_Finalize early blocks in it until every other
//     rank calls MPI_Finalize too; a rank cannot leave the job early.
// So a dead rank is never reported by MPI here: the node must detect it
// with heartbeats and call `mark_departed`, which also frees the pool slots
// its stuck sends would otherwise hold for good.
//
// Shutdown. Call `flush()` first, then destroy after the peers agree to
// stop (a barrier, or a goodbye round of the node). The destructor waits
// up to Traits::shutdown_grace for sends in flight, cancels what is left
// and the K receives, frees the requests and the communicator, and drops
// queued sends. A request that neither completes nor cancels (a send to a
// dead rank) is released with MPI_Request_free and its buffer is never
// freed (MPI may still read it): at most P + K buffers, counted in
// `stats().abandoned`. Messages peers send after the destruction are
// discarded by MPI. MPI_Comm_free is collective in the MPI standard; Open
// MPI 4.1 frees locally (observed: survivors free theirs after a rank died).
//
// Thread safety: one thread at a time per carrier (send, poll, flush,
//                mark_departed, and the destructor must not overlap). MPI
//                must provide MPI_THREAD_FUNNELED when that thread is always
//                the main thread, MPI_THREAD_SERIALIZED otherwise (the
//                default `required_thread_level`). The handler runs inside
//                poll(); it may call send() and mark_departed() on the same
//                carrier, not poll() or flush() (asserted), and must not
//                destroy it. Distinct carriers are independent.
// Memory order:  not applicable (no shared state between threads).
// Blocking/allocation: send, poll, peer_status and mark_departed never block
//                (every MPI call is a start or a test). send allocates only
//                when a message must queue and its peer's queue must grow;
//                poll never allocates (a queue that empties keeps its
//                capacity); mark_departed frees the peer's queue and
//                allocates a fresh buffer per abandoned send slot. create()
//                allocates P + K buffers plus per-peer state. flush() and
//                the destructor spin on MPI tests for a bounded time.
// Size:          one pointer (the state lives on the heap, so the carrier
//                moves cheaply and MPI keeps stable buffer addresses):
//                (P + K) * max_message_bytes bytes of buffers, plus ~100
//                bytes per slot and 64 bytes (one cache line) per peer;
//                when the pool runs dry, pumping the queues scans the peers.
// Configuration: Traits (default_mpi_carrier_traits): max_message_bytes,
//                receive_slots, send_slots, max_in_flight_per_peer,
//                shutdown_grace; runtime
//                mpi_carrier_options: comm, required_thread_level.
// See also:      <causal/adapters/mpi/mpi_session.hpp>,
//                <causal/adapters/mpi/carrier.hpp>, adapters/mpi/README.md,
//                adapters/mpi/bench/mpi_bench.cpp.
#pragma once

#include <causal/adapters/mpi/carrier.hpp>
#include <causal/config.hpp>
#include <causal/result.hpp>

#include <mpi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

CAUSAL_BEGIN_NAMESPACE

namespace mpi {

//===-- traits and options ---------------------------------------------------===//

/// Tuning constants of `basic_mpi_carrier` (compile-time tuning). Every peer
/// of a job must use the same `max_message_bytes`: a larger message than a
/// receiver's slots is a truncation error on its side.
struct default_mpi_carrier_traits {
  /// Largest message, in bytes; larger sends return invalid_argument.
  /// 2 KiB: half of Open MPI's shared-memory eager limit (4 KiB,
  /// btl_vader_eager_limit, header included) and far below TCP's (64 KiB),
  /// so every message goes eagerly: a send completes without the receiver's
  /// help, and shutdown never waits on a rendezvous with a dead rank
  /// (observed: 1 MiB sends to a dead rank made MPI_Finalize hang). A
  /// frontier of capacity 8 serializes to at most 172 bytes.
  static constexpr std::size_t max_message_bytes = 2048;
  /// K, the persistent receives kept posted. Messages beyond K that arrive
  /// between polls wait in MPI's unexpected queue (one more copy each).
  /// A poll tests only the oldest (MPI_Test), so K does not add to an idle
  /// poll's cost (mpi_bench, row (e); README.md).
  static constexpr std::size_t receive_slots = 16;
  /// P, the pooled send buffers. A burst of more than P sends between two
  /// polls queues the rest (copied twice, and the queue may allocate).
  static constexpr std::size_t send_slots = 64;
  /// C, the most sends in flight to one peer; more queue for it. A dead
  /// peer's sends never complete (file comment), so this is how many pool
  /// slots it can pin before it is marked departed; P - C stay for the
  /// others. A burst of more than C to one peer between polls queues.
  static constexpr std::size_t max_in_flight_per_peer = 16;
  /// How long the destructor waits for sends in flight and cancelled
  /// receives before it abandons them (spinning on MPI tests).
  static constexpr std::chrono::milliseconds shutdown_grace{200};
};

/// What `basic_mpi_carrier` needs from its traits (shape only; values are
/// checked by static_asserts in the class).
template <class T>
concept mpi_carrier_traits = requires {
  { T::max_message_bytes } -> std::convertible_to<std::size_t>;
  { T::receive_slots } -> std::convertible_to<std::size_t>;
  { T::send_slots } -> std::convertible_to<std::size_t>;
  { T::max_in_flight_per_peer } -> std::convertible_to<std::size_t>;
  { T::shutdown_grace } -> std::convertible_to<std::chrono::milliseconds>;
};

/// Runtime options of `basic_mpi_carrier::create`.
struct mpi_carrier_options {
  /// The communicator to duplicate (collectively); the carrier's ranks are
  /// this communicator's ranks. Errors inside MPI_Comm_dup itself follow
  /// `comm`'s error handler (MPI_ERRORS_ARE_FATAL unless the caller set one).
  MPI_Comm comm = MPI_COMM_WORLD;
  /// The thread level MPI must provide (MPI_Query_thread), else create()
  /// fails: MPI_THREAD_FUNNELED if only the main thread ever drives the
  /// carrier, MPI_THREAD_SERIALIZED (default) if other threads do, one at
  /// a time.
  int required_thread_level = MPI_THREAD_SERIALIZED;
};

/// The last MPI failure a carrier saw, with MPI's own words for it.
struct mpi_failure {
  /// The failed call, e.g. "MPI_Isend"; null while nothing failed.
  const char* call = nullptr;
  /// The MPI error code and its class (MPI_Error_class).
  int code = MPI_SUCCESS;
  int error_class = MPI_SUCCESS;
  /// The peer rank the call was about, or -1.
  std::int64_t peer = -1;
  /// MPI_Error_string(code), NUL-terminated.
  std::array<char, MPI_MAX_ERROR_STRING> text{};

  /// Returns MPI's text for the failure ("" while nothing failed).
  [[nodiscard]] std::string_view what() const noexcept { return std::string_view(text.data()); }
};

/// Counters a carrier keeps (monotonic except `queued_now`).
struct mpi_carrier_stats {
  std::uint64_t sent = 0;             ///< messages handed to MPI_Isend
  std::uint64_t received = 0;         ///< messages delivered to a handler
  std::uint64_t queued = 0;           ///< sends that had to queue (all peers)
  std::size_t queued_now = 0;         ///< messages queued now (all peers)
  std::size_t queue_high_water = 0;   ///< most messages queued at once (all peers)
  std::uint64_t dropped_to_departed = 0;    ///< queued sends discarded: peer unreachable
  std::uint64_t dropped_from_departed = 0;  ///< received from an unreachable peer, not delivered
  std::uint64_t abandoned = 0;  ///< requests freed while active; their buffers never freed
};

namespace detail {

/// Keeps a buffer that MPI may still read or write (its request was freed
/// while active) alive until the process exits; never frees it, but keeps
/// it reachable so leak checkers do not report it.
inline void keep_for_mpi(std::unique_ptr<std::byte[]> bytes) noexcept {
  struct kept {
    std::mutex lock;
    std::vector<std::unique_ptr<std::byte[]>> buffers;
  };
  // Never deleted: MPI may touch these buffers until MPI_Finalize, which
  // can come after static destructors of other translation units.
  static kept* const all = new (std::nothrow) kept;
  if (all == nullptr) {
    static_cast<void>(bytes.release());
    return;
  }
  const std::lock_guard<std::mutex> hold(all->lock);
  try {
    all->buffers.push_back(std::move(bytes));
  } catch (...) {
    // push_back gives the strong guarantee: `bytes` still owns the buffer.
    static_cast<void>(bytes.release());
  }
}

/// Maps an MPI error class to the closest `errc`.
[[nodiscard]] inline errc errc_of_mpi_class(int error_class) noexcept {
  switch (error_class) {
    case MPI_ERR_RANK:
    case MPI_ERR_COUNT:
    case MPI_ERR_TAG:
    case MPI_ERR_BUFFER:
    case MPI_ERR_TYPE:
    case MPI_ERR_ARG: return errc::invalid_argument;
    case MPI_ERR_TRUNCATE: return errc::capacity_exceeded;
    case MPI_ERR_NO_MEM: return errc::resource_exhausted;
    case MPI_ERR_COMM:
    case MPI_ERR_REQUEST: return errc::failed_precondition;
    default: return errc::device_lost;  // the transport itself failed
  }
}

}  // namespace detail

//===-- basic_mpi_carrier ----------------------------------------------------===//

/// A carrier over MPI point-to-point messages. See the file comment.
///
/// Policies and traits: `Traits` (mpi_carrier_traits) --
/// `max_message_bytes`, `receive_slots`, `send_slots`, `shutdown_grace`.
///
/// Example:
/// ```
/// auto session = causal::mpi::mpi_session::start(&argc, &argv);
/// auto carrier = causal::mpi::mpi_carrier::create();   // collective
/// if (!carrier) { /* carrier.error_value().message() */ }
/// std::byte hello[4]{};
/// (void)carrier->send((carrier->rank() + 1) % carrier->size(), hello);
/// carrier->poll(on_message, &my_state);                // call often
/// ```
template <mpi_carrier_traits Traits = default_mpi_carrier_traits>
class basic_mpi_carrier {
  static_assert(Traits::max_message_bytes >= 1,
                "Traits::max_message_bytes must be at least 1");
  static_assert(Traits::max_message_bytes <= static_cast<std::size_t>(INT_MAX),
                "Traits::max_message_bytes must fit MPI's int count");
  static_assert(Traits::receive_slots >= 1 && Traits::receive_slots <= 4096,
                "Traits::receive_slots must be in 1..4096");
  static_assert(Traits::send_slots >= 1 && Traits::send_slots <= 65535,
                "Traits::send_slots must be in 1..65535");
  static_assert(Traits::max_in_flight_per_peer >= 1 &&
                    Traits::max_in_flight_per_peer <= Traits::send_slots,
                "Traits::max_in_flight_per_peer must be in 1..send_slots");
  static_assert(Traits::shutdown_grace.count() >= 0,
                "Traits::shutdown_grace must not be negative");

 public:
  using traits_type = Traits;
  /// The largest message `send` accepts.
  static constexpr std::size_t max_message_bytes = Traits::max_message_bytes;
  static constexpr std::size_t receive_slots = Traits::receive_slots;
  static constexpr std::size_t send_slots = Traits::send_slots;
  static constexpr std::size_t max_in_flight_per_peer = Traits::max_in_flight_per_peer;
  /// The one tag every message uses (the communicator is private).
  static constexpr int message_tag = 1;

  /// Duplicates `options.comm` (collective over it), checks MPI's thread
  /// level and posts the receives. Fails with failed_precondition when MPI
  /// is not initialized, already finalized, or provides less than
  /// `options.required_thread_level` (position: the level provided); with
  /// resource_exhausted when buffers cannot be allocated; with the mapped
  /// MPI error when an MPI call fails (position: MPI's error code, whose
  /// text MPI_Error_string gives: there is no carrier to ask yet).
  [[nodiscard]] static result<basic_mpi_carrier> create(
      const mpi_carrier_options& options = {}) noexcept {
    int initialized = 0;
    int finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized == 0) {
      return error(errc::failed_precondition,
                   "mpi_carrier::create: MPI is not initialized (MPI_Init_thread first)");
    }
    if (finalized != 0) {
      return error(errc::failed_precondition, "mpi_carrier::create: MPI is already finalized");
    }
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    if (provided < options.required_thread_level) {
      return error(errc::failed_precondition,
                   "mpi_carrier::create: MPI provides a lower thread level than required "
                   "(position: the level provided, MPI_THREAD_*)",
                   static_cast<std::uint64_t>(provided));
    }

    std::unique_ptr<state> s(new (std::nothrow) state);
    if (!s) {
      return error(errc::resource_exhausted, "mpi_carrier::create: out of memory");
    }
    s->thread_level = provided;
    for (std::size_t i = 0; i < receive_slots; ++i) {
      s->receive_buffers[i].reset(new (std::nothrow) std::byte[max_message_bytes]);
      if (!s->receive_buffers[i]) {
        return error(errc::resource_exhausted, "mpi_carrier::create: out of memory");
      }
      s->receive_requests[i] = MPI_REQUEST_NULL;
    }
    for (std::size_t i = 0; i < send_slots; ++i) {
      s->send_buffers[i].reset(new (std::nothrow) std::byte[max_message_bytes]);
      if (!s->send_buffers[i]) {
        return error(errc::resource_exhausted, "mpi_carrier::create: out of memory");
      }
      // Slots are taken from the top: push them so slot 0 goes first.
      s->free_slots[i] = static_cast<std::uint16_t>(send_slots - 1 - i);
    }
    s->free_count = send_slots;

    int rc = MPI_Comm_dup(options.comm, &s->comm);
    if (rc != MPI_SUCCESS) {
      s->comm = MPI_COMM_NULL;
      return create_failure("MPI_Comm_dup", rc);
    }
    // From here on `s` owns a communicator: the state's teardown frees it.
    rc = MPI_Comm_set_errhandler(s->comm, MPI_ERRORS_RETURN);
    if (rc != MPI_SUCCESS) {
      basic_mpi_carrier doomed(std::move(s));
      return create_failure("MPI_Comm_set_errhandler", rc);
    }
    int rank = 0;
    int size = 0;
    MPI_Comm_rank(s->comm, &rank);
    MPI_Comm_size(s->comm, &size);
    s->rank = static_cast<std::uint32_t>(rank);
    s->size = static_cast<std::uint32_t>(size);
    try {
      s->peers.resize(s->size);
    } catch (...) {
      basic_mpi_carrier doomed(std::move(s));
      return error(errc::resource_exhausted, "mpi_carrier::create: out of memory");
    }
    for (std::size_t i = 0; i < receive_slots; ++i) {
      rc = MPI_Recv_init(s->receive_buffers[i].get(), static_cast<int>(max_message_bytes),
                         MPI_BYTE, MPI_ANY_SOURCE, message_tag, s->comm,
                         &s->receive_requests[i]);
      if (rc != MPI_SUCCESS) {
        s->receive_requests[i] = MPI_REQUEST_NULL;
        basic_mpi_carrier doomed(std::move(s));
        return create_failure("MPI_Recv_init", rc);
      }
    }
    // Posting order is slot order 0..K-1: the ring's head is slot 0.
    rc = MPI_Startall(static_cast<int>(receive_slots), s->receive_requests.data());
    if (rc != MPI_SUCCESS) {
      basic_mpi_carrier doomed(std::move(s));
      return create_failure("MPI_Startall", rc);
    }
    s->receives_started = true;
    return basic_mpi_carrier(std::move(s));
  }

  basic_mpi_carrier(basic_mpi_carrier&& other) noexcept = default;
  basic_mpi_carrier& operator=(basic_mpi_carrier&& other) noexcept {
    if (this != &other) {
      close();
      s_ = std::move(other.s_);
    }
    return *this;
  }
  basic_mpi_carrier(const basic_mpi_carrier&) = delete;
  basic_mpi_carrier& operator=(const basic_mpi_carrier&) = delete;

  /// Waits up to Traits::shutdown_grace for sends in flight, cancels the
  /// receives, frees the requests and the communicator (file comment,
  /// "Shutdown"). Queued sends are dropped: flush() first.
  /// A node still using the carrier is refused loudly first
  /// (carrier_users).
  ~basic_mpi_carrier() {
    if (s_ != nullptr) s_->users.refuse_if_used("mpi::mpi_carrier");
    close();
  }

  /// Counted by each node built on this carrier (carrier_users).
  void note_user(int delta) noexcept {
    if (s_ != nullptr) s_->users.note_user(delta);
  }

  //===-- the carrier concept ------------------------------------------------===//

  /// Returns this process's rank in the carrier's communicator.
  [[nodiscard]] std::uint32_t rank() const noexcept { return s_->rank; }
  /// Returns the number of ranks.
  [[nodiscard]] std::uint32_t size() const noexcept { return s_->size; }

  /// Copies `bytes` and sends them to `peer`; never blocks. Returns
  /// invalid_argument for a peer out of range (position: peer) or more than
  /// max_message_bytes (position: the size); the peer's error when it is
  /// unreachable; the carrier's error when it is broken; resource_exhausted
  /// when the peer's queue cannot grow. A send to this rank itself is
  /// allowed. Complexity: one memcpy and one MPI_Isend; when the message
  /// must queue (file comment), one memcpy into the peer's queue (amortised
  /// O(1); may allocate).
  [[nodiscard]] status send(std::uint32_t peer, std::span<const std::byte> bytes) noexcept {
    state& s = *s_;
    if (bytes.size() > max_message_bytes) [[unlikely]] {
      return error(errc::invalid_argument,
                   "mpi_carrier::send: message larger than max_message_bytes (position: its size)",
                   bytes.size());
    }
    if (peer >= s.size) [[unlikely]] {
      return error(errc::invalid_argument,
                   "mpi_carrier::send: no such peer rank (position: the rank)", peer);
    }
    if (s.fault.code() != errc::ok) [[unlikely]] {
      return s.fault;
    }
    peer_state& p = s.peers[peer];
    if (p.why.code() != errc::ok) [[unlikely]] {
      return p.why;
    }
    if (s.free_count == 0 || p.queued != 0 || p.in_flight >= max_in_flight_per_peer) [[unlikely]] {
      return enqueue(p, bytes);
    }
    const std::uint16_t slot = s.free_slots[--s.free_count];
    if (!bytes.empty()) {
      std::memcpy(s.send_buffers[slot].get(), bytes.data(), bytes.size());
    }
    return start_send(slot, peer, bytes.size());
  }

  /// Makes progress on sends and delivers the oldest message that has
  /// arrived, if any, by calling `on_message(context, from, bytes)`; never
  /// blocks or allocates. Messages come out in order per sender, one per
  /// call (file comment: a burst takes one poll a message). Returns the
  /// number of messages delivered (0 or 1).
  /// Precondition: not called from a handler of this carrier.
  std::size_t poll(message_handler on_message, void* context) noexcept {
    state& s = *s_;
    CAUSAL_ASSERT(!s.polling, "mpi_carrier::poll() called from its own handler");
    if (s.fault.code() != errc::ok) [[unlikely]] {
      return 0;
    }
    s.polling = true;
    if (s.unposted != 0 && !repost_delivered()) [[unlikely]] {
      s.polling = false;
      return 0;
    }
    if (s.inflight_count != 0 || s.queued_total != 0) {
      progress_sends();
    }
    // Only the ring head is tested: the receives all match any source on
    // one tag, so MPI fills them in posting order and the head is always
    // the next to complete (see "Ordering" for the one exception, which
    // waits for the head anyway). MPI_Test checks, runs MPI's progress
    // once and checks again, so a message that arrives during that
    // progress is delivered by this poll. (MPI_Testsome over all K checks
    // only before its progress: such a message waited a whole poll, ~40
    // ns of the node's hop, and every idle poll scanned K requests.) One
    // message per poll: asking MPI for a second one costs another progress
    // (~25 ns) whenever none is there, which is the latency-bound case; a
    // burst that is already there costs a check per poll instead.
    std::size_t delivered = 0;
    const std::size_t slot = s.receive_head;
    int done = 0;
    const int rc = MPI_Test(&s.receive_requests[slot], &done, &s.receive_status[slot]);
    if (done != 0) {
      // A receive that completed with an error returns it here (and Open
      // MPI frees the request: restart_receive() posts a new one).
      s.receive_done[slot] = true;
      s.receive_error[slot] = rc;
      // Delivered at once; the slot stays inactive until the next poll
      // restarts it (it becomes the newest post, so ring order stays
      // posting order): the caller gets the message without waiting for
      // an MPI_Start (~300 instructions in Open MPI).
      delivered = deliver(slot, on_message, context);
      ++s.unposted;
      s.receive_head = slot + 1 == receive_slots ? 0 : slot + 1;
    } else if (rc != MPI_SUCCESS) [[unlikely]] {
      break_carrier("MPI_Test", rc);
    }
    s.polling = false;
    return delivered;
  }

  /// Returns ok while `peer` is reachable, otherwise why not: the error
  /// given to mark_departed, the failed MPI call's error, or the carrier's
  /// own failure. invalid_argument for a rank out of range.
  [[nodiscard]] status peer_status(std::uint32_t peer) const noexcept {
    const state& s = *s_;
    if (peer >= s.size) {
      return error(errc::invalid_argument,
                   "mpi_carrier::peer_status: no such peer rank (position: the rank)", peer);
    }
    if (s.fault.code() != errc::ok) {
      return s.fault;
    }
    return s.peers[peer].why;
  }

  //===-- beyond the concept ---------------------------------------------------===//

  /// Marks `peer` unreachable with `why` (the first reason is kept): later
  /// sends to it return `why`, its messages are dropped, its queued sends
  /// are discarded, and its sends in flight are cancelled or, when MPI
  /// cannot cancel them (a dead rank), released and their buffers abandoned
  /// (the pool gets a fresh buffer instead). Never blocks.
  /// Preconditions: `peer < size()`, `why.code() != errc::ok`.
  void mark_departed(std::uint32_t peer, error why) noexcept {
    state& s = *s_;
    CAUSAL_ASSERT(peer < s.size, "mpi_carrier::mark_departed: no such peer rank");
    CAUSAL_ASSERT(why.code() != errc::ok, "mpi_carrier::mark_departed: the reason must be an error");
    peer_state& p = s.peers[peer];
    if (p.why.code() == errc::ok) {
      p.why = why;
    }
    drop_queue(p);
    bool removed = false;
    for (std::size_t i = 0; i < s.inflight_count; ++i) {
      const std::uint16_t slot = s.inflight_slots[i];
      if (s.slot_peers[slot] != peer) {
        continue;
      }
      MPI_Request& request = s.inflight_requests[i];
      MPI_Cancel(&request);
      int done = 0;
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      --p.in_flight;
      if (done == 0) {
        // Neither finished nor cancelled: MPI keeps the request (and may
        // still read the buffer) after we let go of it.
        MPI_Request_free(&request);
        request = MPI_REQUEST_NULL;
        ++s.stats.abandoned;
        detail::keep_for_mpi(std::move(s.send_buffers[slot]));
        s.send_buffers[slot].reset(new (std::nothrow) std::byte[max_message_bytes]);
      }
      if (s.send_buffers[slot]) {
        s.free_slots[s.free_count++] = slot;
      }  // else: out of memory, the pool shrinks by this slot
      removed = true;
    }
    if (removed) {
      compact_inflight();
    }
  }

  /// Drives sends until nothing is queued or in flight (ok), the carrier
  /// breaks (its error), or `limit` passes (timeout; position: messages
  /// still queued or in flight). Does not deliver receives: messages that
  /// arrive meanwhile wait for the next poll(). Spins on MPI tests.
  /// Precondition: not called from a handler of this carrier.
  [[nodiscard]] status flush(std::chrono::nanoseconds limit = std::chrono::seconds(10)) noexcept {
    state& s = *s_;
    CAUSAL_ASSERT(!s.polling, "mpi_carrier::flush() called from a handler");
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      if (s.inflight_count != 0 || s.queued_total != 0) {
        progress_sends();
      }
      if (s.fault.code() != errc::ok) {
        return s.fault;
      }
      if (s.inflight_count == 0 && s.queued_total == 0) {
        return status{};
      }
      if (std::chrono::steady_clock::now() > deadline) {
        return error(errc::timeout,
                     "mpi_carrier::flush: sends still queued or in flight at the deadline "
                     "(position: how many)",
                     s.inflight_count + s.queued_total);
      }
    }
  }

  /// Returns the last MPI failure (call, code, class, peer, MPI's text).
  [[nodiscard]] const mpi_failure& last_failure() const noexcept { return s_->failure; }
  /// Returns the counters.
  [[nodiscard]] mpi_carrier_stats stats() const noexcept {
    mpi_carrier_stats out = s_->stats;
    out.queued_now = s_->queued_total;
    return out;
  }
  /// Returns the number of sends in flight (started, not yet completed).
  [[nodiscard]] std::size_t in_flight() const noexcept { return s_->inflight_count; }
  /// Returns the thread level MPI provided (MPI_Query_thread at create()).
  [[nodiscard]] int thread_level() const noexcept { return s_->thread_level; }
  /// Returns the carrier's private communicator (for diagnostics and
  /// tools; sending on it bypasses the carrier's ordering).
  [[nodiscard]] MPI_Comm communicator() const noexcept { return s_->comm; }

 private:
  /// What the carrier knows about one peer: touched by every send to it.
  struct alignas(CAUSAL_CACHELINE_SIZE) peer_state {
    error why{};                  // ok, or why the peer is unreachable
    std::uint32_t in_flight = 0;  // sends in flight to it (<= C)
    std::uint32_t queued = 0;     // messages in `queue`
    std::size_t queue_head = 0;   // offset of the oldest record
    // Records [u32 size][u32 unused][bytes, padded to 8] from queue_head on.
    std::vector<std::byte> queue;
  };

  /// Everything, on the heap: MPI holds pointers into the buffers and the
  /// request arrays, so they must not move with the carrier.
  struct state {
    carrier_users users;  // nodes on this carrier (note_user)
    // Written by create(), read by everything.
    MPI_Comm comm = MPI_COMM_NULL;
    std::uint32_t rank = 0;
    std::uint32_t size = 0;
    int thread_level = MPI_THREAD_SINGLE;
    bool receives_started = false;
    bool polling = false;
    error fault{};                  // carrier-wide failure; sticky
    std::vector<peer_state> peers;  // one per rank
    mpi_failure failure{};
    mpi_carrier_stats stats{};

    // Receive ring: slot i posted in ring order from `receive_head`; the
    // `unposted` slots just behind it were delivered and wait (inactive,
    // receive_done) for the next poll to restart them.
    std::size_t receive_head = 0;
    std::size_t unposted = 0;
    std::array<MPI_Request, receive_slots> receive_requests{};
    std::array<bool, receive_slots> receive_done{};
    std::array<int, receive_slots> receive_error{};
    std::array<MPI_Status, receive_slots> receive_status{};
    std::array<std::unique_ptr<std::byte[]>, receive_slots> receive_buffers;

    // Send pool: free slots (a stack), in-flight requests (compact).
    std::size_t free_count = 0;
    std::size_t inflight_count = 0;
    std::array<std::uint16_t, send_slots> free_slots{};
    std::array<MPI_Request, send_slots> inflight_requests{};
    std::array<std::uint16_t, send_slots> inflight_slots{};
    std::array<std::uint32_t, send_slots> slot_peers{};
    std::array<int, send_slots> send_indices{};
    std::array<MPI_Status, send_slots> send_scratch{};
    std::array<std::unique_ptr<std::byte[]>, send_slots> send_buffers;

    // Messages queued over all peers, and where the round-robin pump of
    // the peers' queues starts next.
    std::size_t queued_total = 0;
    std::uint32_t pump_cursor = 0;
  };

  /// Bytes before a queued message's bytes: [u32 size][u32 unused].
  static constexpr std::size_t record_header = 8;

  explicit basic_mpi_carrier(std::unique_ptr<state> s) noexcept : s_(std::move(s)) {}

  /// Builds create()'s error for a failed MPI call (position: MPI's code).
  [[nodiscard]] static error create_failure(const char* call, int rc) noexcept {
    int error_class = MPI_ERR_UNKNOWN;
    MPI_Error_class(rc, &error_class);
    const errc code = detail::errc_of_mpi_class(error_class);
    const auto position = static_cast<std::uint64_t>(static_cast<std::int64_t>(rc));
    if (std::string_view(call) == "MPI_Comm_dup") {
      return error(code, "mpi_carrier::create: MPI_Comm_dup failed (position: MPI error code)",
                   position);
    }
    if (std::string_view(call) == "MPI_Recv_init") {
      return error(code, "mpi_carrier::create: MPI_Recv_init failed (position: MPI error code)",
                   position);
    }
    return error(code, "mpi_carrier::create: setting up the communicator failed "
                       "(position: MPI error code)",
                 position);
  }

  /// Records `rc` from `call` (about `peer`, or -1) in last_failure().
  void record_failure(const char* call, int rc, std::int64_t peer) noexcept {
    mpi_failure& f = s_->failure;
    f.call = call;
    f.code = rc;
    f.peer = peer;
    f.error_class = MPI_ERR_UNKNOWN;
    MPI_Error_class(rc, &f.error_class);
    int length = 0;
    f.text.fill('\0');
    if (MPI_Error_string(rc, f.text.data(), &length) != MPI_SUCCESS) {
      static constexpr char unknown[] = "unknown MPI error code";
      std::memcpy(f.text.data(), unknown, sizeof unknown);
    }
    f.text.back() = '\0';
  }

  /// Makes `peer` unreachable after a failed MPI call about it.
  error fail_peer(const char* call, int rc, std::uint32_t peer) noexcept {
    record_failure(call, rc, peer);
    const errc code = detail::errc_of_mpi_class(s_->failure.error_class);
    error e;
    if (std::string_view(call) == "MPI_Isend") {
      e = error(code, "mpi_carrier: MPI_Isend to this peer failed (position: the peer; "
                      "last_failure() has MPI's text)", peer);
    } else if (code == errc::capacity_exceeded) {
      e = error(code, "mpi_carrier: a message from this peer exceeded max_message_bytes; its "
                      "carrier uses other traits (position: the peer)", peer);
    } else if (std::string_view(call) == "MPI_Testsome (send)") {
      e = error(code, "mpi_carrier: a send to this peer completed with an error (position: the "
                      "peer; last_failure() has MPI's text)", peer);
    } else {
      e = error(code, "mpi_carrier: a receive from this peer completed with an error (position: "
                      "the peer; last_failure() has MPI's text)", peer);
    }
    peer_state& p = s_->peers[peer];
    if (p.why.code() == errc::ok) {
      p.why = e;
    }
    return p.why;
  }

  /// Breaks the carrier after a failure not tied to one peer.
  void break_carrier(const char* call, int rc) noexcept {
    record_failure(call, rc, -1);
    const errc code = detail::errc_of_mpi_class(s_->failure.error_class);
    if (s_->fault.code() != errc::ok) {
      return;
    }
    if (std::string_view(call) == "MPI_Start") {
      s_->fault = error(code, "mpi_carrier: restarting a receive failed; the carrier is broken "
                              "(position: MPI error code; last_failure() has MPI's text)",
                        static_cast<std::uint64_t>(static_cast<std::int64_t>(rc)));
    } else {
      s_->fault = error(code, "mpi_carrier: MPI_Test or MPI_Testsome failed; the carrier is broken "
                              "(position: MPI error code; last_failure() has MPI's text)",
                        static_cast<std::uint64_t>(static_cast<std::int64_t>(rc)));
    }
  }

  /// Starts the send of `size` bytes in `slot` to `peer`.
  status start_send(std::uint16_t slot, std::uint32_t peer, std::size_t size) noexcept {
    state& s = *s_;
    MPI_Request& request = s.inflight_requests[s.inflight_count];
    const int rc = MPI_Isend(s.send_buffers[slot].get(), static_cast<int>(size), MPI_BYTE,
                             static_cast<int>(peer), message_tag, s.comm, &request);
    if (rc != MPI_SUCCESS) [[unlikely]] {
      request = MPI_REQUEST_NULL;
      s.free_slots[s.free_count++] = slot;
      return fail_peer("MPI_Isend", rc, peer);
    }
    s.inflight_slots[s.inflight_count] = slot;
    s.slot_peers[slot] = peer;
    ++s.inflight_count;
    ++s.peers[peer].in_flight;
    ++s.stats.sent;
    return status{};
  }

  /// Appends a send to `p`'s queue (file comment: when a message queues).
  CAUSAL_NOINLINE status enqueue(peer_state& p, std::span<const std::byte> bytes) noexcept {
    state& s = *s_;
    const std::size_t padded = (bytes.size() + 7) & ~std::size_t{7};
    const std::size_t at = p.queue.size();
    try {
      p.queue.resize(at + record_header + padded);
    } catch (...) {
      return error(errc::resource_exhausted,
                   "mpi_carrier::send: the message must queue and the peer's queue cannot grow");
    }
    const auto size32 = static_cast<std::uint32_t>(bytes.size());
    std::memcpy(p.queue.data() + at, &size32, sizeof size32);
    if (!bytes.empty()) {
      std::memcpy(p.queue.data() + at + record_header, bytes.data(), bytes.size());
    }
    ++p.queued;
    ++s.queued_total;
    ++s.stats.queued;
    s.stats.queue_high_water = std::max(s.stats.queue_high_water, s.queued_total);
    return status{};
  }

  /// Discards `p`'s queued messages (its peer is unreachable).
  void drop_queue(peer_state& p) noexcept {
    state& s = *s_;
    s.stats.dropped_to_departed += p.queued;
    s.queued_total -= p.queued;
    p.queued = 0;
    p.queue_head = 0;
    p.queue.clear();
    p.queue.shrink_to_fit();  // nothing more will queue for it
  }

  /// Starts the queued sends of peer `peer` while slots and its cap allow.
  void pump_queue(std::uint32_t peer) noexcept {
    state& s = *s_;
    peer_state& p = s.peers[peer];
    if (p.why.code() != errc::ok) {
      drop_queue(p);
      return;
    }
    while (p.queued != 0 && s.free_count != 0 && p.in_flight < max_in_flight_per_peer) {
      std::uint32_t size = 0;
      const std::byte* record = p.queue.data() + p.queue_head;
      std::memcpy(&size, record, sizeof size);
      p.queue_head += record_header + ((std::size_t{size} + 7) & ~std::size_t{7});
      --p.queued;
      --s.queued_total;
      const std::uint16_t slot = s.free_slots[--s.free_count];
      if (size != 0) {
        std::memcpy(s.send_buffers[slot].get(), record + record_header, size);
      }
      if (!start_send(slot, peer, size)) {
        drop_queue(p);  // start_send marked the peer unreachable
        return;
      }
    }
    if (p.queued == 0) {
      p.queue.clear();  // keeps the capacity for the next burst
      p.queue_head = 0;
    } else if (p.queue_head > p.queue.size() / 2) {
      p.queue.erase(p.queue.begin(), p.queue.begin() + static_cast<std::ptrdiff_t>(p.queue_head));
      p.queue_head = 0;
    }
  }

  /// Reclaims finished sends, then refills the pool from the peers' queues.
  void progress_sends() noexcept {
    state& s = *s_;
    if (s.inflight_count != 0) {
      int count = 0;
      const int rc = MPI_Testsome(static_cast<int>(s.inflight_count), s.inflight_requests.data(),
                                  &count, s.send_indices.data(), s.send_scratch.data());
      if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) [[unlikely]] {
        break_carrier("MPI_Testsome", rc);
        return;
      }
      if (count != MPI_UNDEFINED && count > 0) {
        for (int i = 0; i < count; ++i) {
          const auto at = static_cast<std::size_t>(s.send_indices[static_cast<std::size_t>(i)]);
          const std::uint16_t slot = s.inflight_slots[at];
          const std::uint32_t peer = s.slot_peers[slot];
          --s.peers[peer].in_flight;
          const int send_error = s.send_scratch[static_cast<std::size_t>(i)].MPI_ERROR;
          if (rc == MPI_ERR_IN_STATUS && send_error != MPI_SUCCESS) [[unlikely]] {
            static_cast<void>(fail_peer("MPI_Testsome (send)", send_error, peer));
          }
          s.free_slots[s.free_count++] = slot;
          s.inflight_requests[at] = MPI_REQUEST_NULL;  // MPI did so already; be explicit
        }
        compact_inflight();
      }
    }
    if (s.queued_total == 0 || s.free_count == 0) {
      return;
    }
    // Round-robin over the peers, so one peer's long queue cannot starve
    // the others of pool slots.
    const std::uint32_t first = s.pump_cursor;
    std::uint32_t peer = first;
    do {
      if (s.peers[peer].queued != 0) {
        pump_queue(peer);
      }
      peer = peer + 1 == s.size ? 0 : peer + 1;
    } while (peer != first && s.queued_total != 0 && s.free_count != 0);
    s.pump_cursor = peer;
  }

  /// Drops finished (null) requests from the in-flight arrays.
  void compact_inflight() noexcept {
    state& s = *s_;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < s.inflight_count; ++i) {
      if (s.inflight_requests[i] != MPI_REQUEST_NULL) {
        s.inflight_requests[kept] = s.inflight_requests[i];
        s.inflight_slots[kept] = s.inflight_slots[i];
        ++kept;
      }
    }
    s.inflight_count = kept;
  }

  /// Posts receive `slot` again. Open MPI 4.1 frees a persistent request
  /// that completed with an error (MPI_Test sets it to MPI_REQUEST_NULL,
  /// e.g. after a truncation), and MPI_Start on a null or
  /// freed request is reported on MPI_COMM_WORLD -- fatal by default -- so
  /// such a slot gets a new persistent receive on the same buffer instead.
  /// Restarts the delivered slots behind the ring head, oldest first.
  /// False when a restart failed (the carrier is then broken).
  [[nodiscard]] bool repost_delivered() noexcept {
    state& s = *s_;
    std::size_t slot = (s.receive_head + receive_slots - s.unposted) % receive_slots;
    while (s.unposted != 0) {
      s.receive_done[slot] = false;
      const int start_rc = restart_receive(slot);
      if (start_rc != MPI_SUCCESS) [[unlikely]] {
        break_carrier("MPI_Start", start_rc);
        return false;
      }
      --s.unposted;
      slot = slot + 1 == receive_slots ? 0 : slot + 1;
    }
    return true;
  }

  [[nodiscard]] int restart_receive(std::size_t slot) noexcept {
    state& s = *s_;
    MPI_Request& request = s.receive_requests[slot];
    if (request == MPI_REQUEST_NULL) [[unlikely]] {
      const int rc = MPI_Recv_init(s.receive_buffers[slot].get(),
                                   static_cast<int>(max_message_bytes), MPI_BYTE, MPI_ANY_SOURCE,
                                   message_tag, s.comm, &request);
      if (rc != MPI_SUCCESS) {
        request = MPI_REQUEST_NULL;
        s.receive_done[slot] = true;  // nothing posted: close() must not cancel it
        return rc;
      }
    }
    const int rc = MPI_Start(&request);
    if (rc != MPI_SUCCESS) {
      s.receive_done[slot] = true;  // inactive: close() must not cancel it
    }
    return rc;
  }

  /// Hands the message in receive `slot` to the handler; returns 1 if it
  /// was delivered, 0 if dropped or failed.
  std::size_t deliver(std::size_t slot, message_handler on_message, void* context) noexcept {
    state& s = *s_;
    const MPI_Status& st = s.receive_status[slot];
    const int source = st.MPI_SOURCE;
    const bool known = source >= 0 && static_cast<std::uint32_t>(source) < s.size;
    if (s.receive_error[slot] != MPI_SUCCESS) [[unlikely]] {
      if (known) {
        static_cast<void>(fail_peer("MPI_Test (receive)", s.receive_error[slot],
                                    static_cast<std::uint32_t>(source)));
      } else {
        break_carrier("MPI_Test", s.receive_error[slot]);
      }
      return 0;
    }
    const auto from = static_cast<std::uint32_t>(source);
    if (s.peers[from].why.code() != errc::ok) [[unlikely]] {
      ++s.stats.dropped_from_departed;
      return 0;
    }
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    ++s.stats.received;
    on_message(context, from,
               std::span<const std::byte>(s.receive_buffers[slot].get(),
                                          static_cast<std::size_t>(count)));
    return 1;
  }

  /// Tears down: sends, receives, communicator (file comment, "Shutdown").
  void close() noexcept {
    if (!s_) {
      return;
    }
    state& s = *s_;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized != 0 || s.comm == MPI_COMM_NULL) {
      // After MPI_Finalize nothing can touch the buffers any more (and no
      // MPI call is allowed); without a communicator nothing was posted.
      s_.reset();
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + Traits::shutdown_grace;

    // Sends in flight: let them finish, then cancel, then let go.
    for (peer_state& p : s.peers) {
      s.stats.dropped_to_departed += p.queued;
    }
    s.queued_total = 0;
    while (s.inflight_count != 0 && s.fault.code() == errc::ok &&
           std::chrono::steady_clock::now() < deadline) {
      progress_sends();
    }
    for (std::size_t i = 0; i < s.inflight_count; ++i) {
      MPI_Request& request = s.inflight_requests[i];
      if (request == MPI_REQUEST_NULL) {
        continue;
      }
      MPI_Cancel(&request);
      int done = 0;
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (done == 0) {
        MPI_Request_free(&request);
        ++s.stats.abandoned;
        detail::keep_for_mpi(std::move(s.send_buffers[s.inflight_slots[i]]));
      }
    }
    s.inflight_count = 0;

    // Receives: cancel the active ones, wait (bounded) for the cancels.
    if (s.receives_started) {
      for (std::size_t i = 0; i < receive_slots; ++i) {
        if (!s.receive_done[i]) {
          MPI_Cancel(&s.receive_requests[i]);
        }
      }
      for (;;) {
        bool pending = false;
        for (std::size_t i = 0; i < receive_slots; ++i) {
          if (!s.receive_done[i]) {
            int done = 0;
            MPI_Test(&s.receive_requests[i], &done, MPI_STATUS_IGNORE);
            s.receive_done[i] = done != 0;
            pending = pending || done == 0;
          }
        }
        if (!pending || std::chrono::steady_clock::now() >= deadline) {
          break;
        }
      }
    }
    for (std::size_t i = 0; i < receive_slots; ++i) {
      if (s.receive_requests[i] == MPI_REQUEST_NULL) {
        continue;
      }
      const bool active = s.receives_started && !s.receive_done[i];
      MPI_Request_free(&s.receive_requests[i]);
      if (active) {
        ++s.stats.abandoned;
        detail::keep_for_mpi(std::move(s.receive_buffers[i]));
      }
    }
    MPI_Comm_free(&s.comm);
    s_.reset();
  }

  std::unique_ptr<state> s_;
};

/// The carrier with default traits.
using mpi_carrier = basic_mpi_carrier<>;

}  // namespace mpi

CAUSAL_END_NAMESPACE
